"""Chips, links and rank placement on Trainium systems.

This module answers two questions: *what are the levels of a Trainium system and
how fast is each one*, and *where does every rank of a parallel job land*. Link
figures come from ``data/links.csv`` through :mod:`trainium_lab.specs`, with the
scope (per chip, per link, per instance) and direction (one-way, bidirectional,
"not stated") the source gives. Costing collectives is in
:mod:`trainium_lab.collectives`.

Public API (used by later chapters, e.g. the parallel-layout planner)
---------------------------------------------------------------------
``cluster(system, n_systems=1, lnc=None) -> Cluster``
    The hardware: ``n_systems`` copies of a system (instances or UltraServers),
    joined by EFA. ``Cluster.levels`` lists its :class:`Level` s, fastest first;
    ``Cluster.n_ranks`` counts logical NeuronCores.
``place(tp, pp=1, dp=1, ep=1, *, system, n_systems=None, lnc=None, ordering="tp-pp-dp") -> Placement``
    Puts every rank on one logical core. Degrees count ranks (logical cores),
    not chips; ``tp=64`` at LNC=2 is 16 Trainium2 chips. ``Placement.ranks`` is
    the rank-to-core map, ``Placement.groups(kind)`` describes every group of a
    kind (``"tp"``, ``"pp"``, ``"dp"``, ``"ep"``), ``Placement.level(kind)`` is
    the slowest level a group of that kind crosses, ``Placement.summary()`` one
    row per kind and ``Placement.problems`` says which kinds cross a slower
    level than their size requires (the "TP across the ring by accident" case).
``group_spans(tp, pp, dp, ep, *, system, n_systems, lnc, ordering) -> DataFrame``
    What ``Placement.slowest`` says for every kind, in closed form (no rank table), for
    clusters of any size: the planner's fast path.
``levels_table(systems=None) -> DataFrame``
    Every level of every system with its per-chip bandwidth, scope and direction.
``alternative_links_table(systems=None) -> DataFrame``
    Sourced figures for a level that the model does not use (Trn3 Gen2's PCIe fabric).
``ranks_per_chip(chip, lnc)``, ``ranks_per_system(system, lnc)``, ``check_degrees(...)``
    Counting in logical cores.

Conventions
-----------
*Ranks are packed in order.* Rank ``r`` runs on the ``r``-th logical core of the
cluster, counting logical cores within a chip first, then chips within an
instance, then instances within a system, then systems. The *ordering* decides
which parallel dimension varies fastest with the rank: ``"tp-pp-dp"`` (innermost
first) gives ranks ``0..tp-1`` to the first TP group, so TP groups fill
consecutive cores. This is how Megatron-style launchers build their process grid
(Shoeybi et al. 2019; Narayanan et al. 2021).

*Chip positions.* Chip ``c`` of an instance sits at row ``c // side`` and column
``c % side`` of its ``side × side`` grid (4 × 4 for Trn2). AWS does not publish
which device number sits where in the torus; the row-major layout is an
assumption of this model, and only which chips share an instance matters for the
costs here.

*Bandwidth per level* is the per-chip figure for the links used when traffic
crosses that level: the 2D torus inside a Trn2 instance, the ring joining chips
at the same position across an UltraServer's four instances (the slow third
dimension of the 4×4×4 grid), EFA between systems. Both Trn3 UltraServers use the
NeuronLink-v4 per-device figure at every level inside the UltraServer: the Trn3
architecture page gives the same figure for Gen1 and Gen2 and does not say how it
splits between Gen2's two switch levels, so a uniform figure is an assumption (each
level's ``note`` says so); the page's PCIe figures for Gen2 are kept as alternatives.
Figures whose source gives them per instance are divided by the chips per instance,
and the scope text says so. Traffic between logical cores of one chip is not modelled (no figure is
published); it is reported as the ``"chip"`` level with no bandwidth.

References
----------
AWS Neuron documentation: "Amazon EC2 Trn2 Architecture", "Collective communication:
System Connectivity", "Logical NeuronCore configuration", "Amazon EC2 Trn3
Architecture" (see ``data/sources.csv``).
M. Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (2019); D. Narayanan et al.,
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
SC21, arXiv:2104.04473 (rank ordering: tensor-parallel ranks adjacent).

Examples
--------
>>> p = place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
>>> p.cluster.n_systems, p.cluster.n_ranks
(2, 512)
>>> [p.level(k).name for k in ("tp", "pp", "dp")]
['instance', 'ultraserver', 'efa']
>>> p.problems
()
>>> bad = place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="pp-tp-dp")
>>> bad.level("tp").name
'ultraserver'
>>> print(bad.problems[0])  # doctest: +ELLIPSIS
TP groups (64 ranks, spread over 64 chips instead of 16) cross the ultraserver level ...
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np
import pandas as pd

from trainium_lab import cores, specs
from trainium_lab._validate import UnknownNameError, choice, integer, sequence
from trainium_lab.units import GB, format_bandwidth

__all__ = [
    "Level", "Cluster", "Placement", "KINDS", "LATENCY_CRITICAL", "LEVEL_NAMES", "SYSTEMS", "ORDERINGS",
    "FABRIC_READINGS",
    "cluster", "place", "levels_table", "alternative_links_table", "ranks_per_chip",
    "ranks_per_system", "check_degrees",
    "parse_ordering", "all_orderings", "group_spans",
]

#: parallel dimensions, in the default innermost-first order
KINDS: tuple[str, ...] = ("tp", "pp", "dp", "ep")
#: kinds whose collectives sit inside every layer, so their placement is checked
LATENCY_CRITICAL: tuple[str, ...] = ("tp", "ep")
#: the four levels a group can cross, fastest first (Trn3 calls an instance a server)
LEVEL_NAMES: tuple[str, ...] = ("chip", "instance", "ultraserver", "efa")

# For each system: which link serves each level it has. ``None`` means the level
# does not exist in that system (a standalone instance has no UltraServer ring).
_LEVEL_LINKS: dict[str, dict[str, str | None]] = {
    "trn1.32xlarge": {"instance": "trn1-neuronlink", "ultraserver": None, "efa": "trn1-efa"},
    "trn1n.32xlarge": {"instance": "trn1n-neuronlink", "ultraserver": None, "efa": "trn1n-efa"},
    "trn2.48xlarge": {"instance": "trn2-neuronlink-intra", "ultraserver": None, "efa": "trn2-efa"},
    "trn2-ultraserver": {"instance": "trn2-neuronlink-intra",
                         "ultraserver": "trn2-neuronlink-inter", "efa": "trn2-efa"},
    # The Trn3 architecture page gives NeuronLink-v4 per device for Gen1 *and* Gen2 (the same
    # figure in both columns of its table), so both generations are modelled on NeuronLink-v4.
    "trn3-gen1-ultraserver": {"instance": "trn3-neuronlink", "ultraserver": "trn3-neuronlink",
                              "efa": "trn3-efa"},
    "trn3-gen2-ultraserver": {"instance": "trn3-neuronlink", "ultraserver": "trn3-neuronlink",
                              "efa": "trn3-efa"},
    # the same UltraServer under the page's PCIe-fabric section (data/systems.csv ``reading_of``):
    # 256 GB/s per chip inside a 4-chip server; across servers 320 GB/s inside a rack, or the
    # 128 GB/s of the direct inter-rack links (how many servers a rack holds is not published)
    "trn3-gen2-ultraserver-pcie": {"instance": "trn3-gen2-pcie-intra-server",
                                   "ultraserver": "trn3-gen2-pcie-inter-server", "efa": "trn3-efa"},
    "trn3-gen2-ultraserver-pcie-inter-rack": {"instance": "trn3-gen2-pcie-intra-server",
                                              "ultraserver": "trn3-gen2-pcie-inter-rack", "efa": "trn3-efa"},
}
#: the readings of one system's published interconnect figures, by name: Trn3 Gen2's page gives
#: NeuronLink-v4 per device and, in a later section, a PCIe switch fabric per level
FABRIC_READINGS: dict[str, dict[str, str]] = {
    "trn3-gen2-ultraserver": {"neuronlink-v4": "trn3-gen2-ultraserver",
                              "pcie": "trn3-gen2-ultraserver-pcie",
                              "pcie-inter-rack": "trn3-gen2-ultraserver-pcie-inter-rack"},
}
#: Sourced figures for the same level that the model does *not* use: a different fabric the
#: source describes without reconciling it with the figure used (shown to the learner).
_LEVEL_ALTERNATIVES: dict[tuple[str, str], tuple[str, ...]] = {
    ("trn3-gen2-ultraserver", "instance"): ("trn3-gen2-pcie-intra-server",),
    ("trn3-gen2-ultraserver", "ultraserver"): ("trn3-gen2-pcie-inter-server", "trn3-gen2-pcie-inter-rack"),
}
_SWITCH_ASSUMPTION = ("assumption: every pair of chips gets the same per-chip NeuronLink-v4 figure "
                      "through NeuronSwitch-v1; no AWS page states that the figure is uniform")
_GEN2_UNKNOWN = ("how the per-device NeuronLink-v4 figure splits between the first-level switch "
                 "(inside a 4-chip server) and the second-level switches (across servers) is not "
                 "published, so both levels get the whole figure; the trn3-arch page also gives "
                 "PCIe Gen6 per-chip figures for Gen2 (see alternatives) without reconciling them "
                 "with NeuronLink-v4")
_LEVEL_NOTES: dict[tuple[str, str], str] = {
    ("trn3-gen1-ultraserver", "instance"): _SWITCH_ASSUMPTION,
    ("trn3-gen1-ultraserver", "ultraserver"): _SWITCH_ASSUMPTION,
    ("trn3-gen2-ultraserver", "instance"): f"{_SWITCH_ASSUMPTION}; {_GEN2_UNKNOWN}",
    ("trn3-gen2-ultraserver", "ultraserver"): f"{_SWITCH_ASSUMPTION}; {_GEN2_UNKNOWN}",
    ("trn3-gen2-ultraserver-pcie", "ultraserver"): (
        "PCIe reading: a group across servers is taken to stay inside one rack (inter-server switches); "
        "the page does not say how many servers a rack holds"),
    ("trn3-gen2-ultraserver-pcie-inter-rack", "ultraserver"): (
        "PCIe reading: a group across servers is taken to cross racks (direct inter-rack links, the "
        "slowest level); the page does not say how many servers a rack holds"),
}
#: systems this module can lay out
SYSTEMS: tuple[str, ...] = tuple(_LEVEL_LINKS)


@dataclass(frozen=True)
class Level:
    """One level of a cluster: what traffic crosses when it leaves a smaller unit.

    Attributes
    ----------
    name : str
        ``"chip"``, ``"instance"``, ``"ultraserver"`` or ``"efa"`` (see ``LEVEL_NAMES``).
    index : int
        Position in ``LEVEL_NAMES`` (0 fastest); comparable across systems.
    link_key : str or None
        Key of the link in ``data/links.csv`` (``None`` for the on-chip level).
    bytes_per_s : float or None
        Bandwidth available to one chip at this level, bytes/s (``None`` on chip).
    scope : str
        What the figure covers, as the source says (and any conversion made here).
    direction : str
        "one-way", "bidirectional" or "not stated", as the source says.
    latency_s : float or None
        Per-message latency if the source gives one (only EFA has one in ``data/``).
    switched : bool
        ``True`` where every chip reaches every other directly through a switch.
    description, note : str
        The link's description and any caveat this model adds.
    alternatives : tuple of str
        Keys in ``data/links.csv`` of sourced figures for this level that the model does
        not use (another fabric the source describes); see :func:`alternative_links_table`.
    """

    name: str
    index: int
    link_key: str | None
    bytes_per_s: float | None
    scope: str
    direction: str
    latency_s: float | None
    switched: bool
    description: str
    note: str = ""
    alternatives: tuple[str, ...] = ()

    def __repr__(self) -> str:
        bw = "no published figure" if self.bytes_per_s is None else (
            f"{format_bandwidth(self.bytes_per_s)} per chip, direction {self.direction}")
        return f"Level({self.name!r}: {self.link_key or 'on chip'}, {bw})"

    def _repr_markdown_(self) -> str:
        if self.bytes_per_s is None:
            return f"**{self.name}** level: {self.note or 'no published figure'}"
        note = f"; {self.note}" if self.note else ""
        return (f"**{self.name}** level (`{self.link_key}`): {format_bandwidth(self.bytes_per_s)} "
                f"({self.scope}, direction {self.direction}){note}")


@dataclass(frozen=True)
class Cluster:
    """``n_systems`` copies of one system, with its levels and logical-core counts.

    Build it with :func:`cluster`. Counting: ``ranks_per_chip`` logical cores per
    chip (physical cores / LNC), ``chips_per_instance`` chips per instance (or
    Trn3 server), ``instances_per_system`` instances per system. ``system_spec`` is the
    system's record, resolved once by :func:`cluster`: code holding a cluster reads the
    system's and the chip's figures there (``chip_spec``) and never looks a name up again.
    """

    system: str
    chip: str
    n_systems: int
    lnc: int
    ranks_per_chip: int
    chips_per_instance: int
    instances_per_system: int
    grid_side: int
    levels: tuple[Level, ...]
    topology: str
    system_spec: specs.System = field(repr=False, compare=False)

    @property
    def chip_spec(self) -> specs.Chip:
        """The chip's record (from :attr:`system_spec`)."""
        return self.system_spec.chip

    @property
    def chips_per_system(self) -> int:
        """Chips in one system."""
        return self.chips_per_instance * self.instances_per_system

    @property
    def n_chips(self) -> int:
        """Chips in the cluster."""
        return self.chips_per_system * self.n_systems

    @property
    def n_ranks(self) -> int:
        """Logical NeuronCores (ranks) in the cluster."""
        return self.n_chips * self.ranks_per_chip

    @property
    def ranks_per_instance(self) -> int:
        """Logical NeuronCores in one instance."""
        return self.chips_per_instance * self.ranks_per_chip

    @property
    def ranks_per_system(self) -> int:
        """Logical NeuronCores in one system."""
        return self.chips_per_system * self.ranks_per_chip

    def __repr__(self) -> str:
        return (f"Cluster({self.n_systems} × {self.system}: {self.n_chips} chips, {self.n_ranks} ranks "
                f"at LNC={self.lnc})")

    def _repr_markdown_(self) -> str:
        levels = "; ".join(f"{lv.name} {format_bandwidth(lv.bytes_per_s)}" for lv in self.levels
                           if lv.bytes_per_s is not None)
        return (f"**{self.n_systems} × {self.system}**: {self.n_chips} {self.chip} chips, "
                f"{self.n_ranks} ranks ({self.ranks_per_chip} per chip at LNC={self.lnc}); per-chip "
                f"bandwidth by level: {levels}")

    def level(self, name: str) -> Level:
        """The level called ``name``; raises ``ValueError`` listing this cluster's levels."""
        for lv in self.levels:
            if lv.name == name:
                return lv
        listed = ", ".join(repr(lv.name) for lv in self.levels)
        raise UnknownNameError(f"level must be one of {listed} for {self.system}; got {name!r}")

    def crossing_level(self, n_chips: int) -> Level:
        """The fastest level a group of ``n_chips`` whole chips can be confined to."""
        n_chips = integer("n_chips", n_chips, minimum=1, maximum=self.n_chips)
        if n_chips == 1:
            return self.level("chip")
        if n_chips <= self.chips_per_instance:
            return self.level("instance")
        if n_chips <= self.chips_per_system and self.instances_per_system > 1:
            return self.level("ultraserver")
        return self.level("efa")


# --------------------------------------------------------------------- counting


def ranks_per_chip(chip: str | specs.Chip = "trn2", lnc: int | None = None) -> int:
    """Ranks per chip: one per logical NeuronCore (:func:`trainium_lab.cores.logical_cores_per_chip`).

    Parameters
    ----------
    chip : str or specs.Chip
        A chip name known to :func:`trainium_lab.specs.chip`, or its record.
    lnc : int, optional
        Physical cores per logical core (1 or 2 on Trn2/Trn3); default: the chip's
        documented default (Trn2: 2; Trn1 has no setting: 1; Trn3 has none stated, so
        ``lnc`` is required there), as :func:`trainium_lab.cores.resolve_lnc` decides.

    References
    ----------
    AWS Neuron docs, "Logical NeuronCore configuration".

    Examples
    --------
    >>> ranks_per_chip("trn2"), ranks_per_chip("trn2", lnc=1)
    (4, 8)
    """
    return cores.logical_cores_per_chip(chip, lnc)


def ranks_per_system(system: str | specs.System = "trn2.48xlarge", lnc: int | None = None) -> int:
    """Logical NeuronCores in one system (instance or UltraServer).

    Examples
    --------
    >>> ranks_per_system("trn2.48xlarge", lnc=2), ranks_per_system("trn2-ultraserver", lnc=2)
    (64, 256)
    """
    s = specs.resolve_system(system)
    return s.n_chips * ranks_per_chip(s.chip, lnc)


def check_degrees(n_ranks: int, tp: int, pp: int = 1, dp: int = 1, ep: int = 1) -> int:
    """Check that ``tp × pp × dp × ep == n_ranks``; return the product.

    Raises
    ------
    ValueError
        Naming ``tp × pp × dp × ep`` and both numbers when they differ.

    Examples
    --------
    >>> check_degrees(512, tp=64, pp=4, dp=2)
    512
    >>> check_degrees(512, tp=64, pp=4, dp=3)
    Traceback (most recent call last):
    ...
    ValueError: tp × pp × dp × ep must equal the number of ranks (512); got 64 × 4 × 3 × 1 = 768
    """
    n_ranks = integer("n_ranks", n_ranks, minimum=1)
    degrees = {k: integer(k, v, minimum=1) for k, v in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep))}
    product = math.prod(degrees.values())
    if product != n_ranks:
        text = " × ".join(str(v) for v in degrees.values())
        raise ValueError(f"tp × pp × dp × ep must equal the number of ranks ({n_ranks}); "
                         f"got {text} = {product}")
    return product


# --------------------------------------------------------------------- the hardware


@cache
def _levels(s: specs.System) -> tuple[Level, ...]:
    out = [Level("chip", 0, None, None, "between logical cores of one chip", "not stated", None,
                 False, "on-chip traffic between logical NeuronCores",
                 "not modelled: no published figure; far faster than any chip-to-chip link")]
    for index, name in enumerate(LEVEL_NAMES[1:], start=1):
        key = _LEVEL_LINKS[s.key][name]
        if key is None:
            continue
        lk = specs.link(key)
        bandwidth, scope = lk.bytes_per_s, lk.scope
        if "per-instance" in scope:  # e.g. Trn1 EFA: convert to the share of one chip
            bandwidth = bandwidth / s.chips_per_instance
            scope = f"{scope}, divided here by {s.chips_per_instance} chips (per chip)"
        switched = "switch" in lk.description.lower() or "switch" in s.topology.lower()
        out.append(Level(name, index, key, bandwidth, scope, lk.direction, lk.latency_s,
                         switched and name != "efa", lk.description,
                         _LEVEL_NOTES.get((s.key, name), ""),
                         _LEVEL_ALTERNATIVES.get((s.key, name), ())))
    return tuple(out)


def cluster(system: str | specs.System = "trn2-ultraserver", n_systems: int = 1,
            lnc: int | None = None) -> Cluster:
    """``n_systems`` copies of ``system`` joined by EFA, counted in logical cores.

    Parameters
    ----------
    system : str or specs.System
        One of ``SYSTEMS``: ``"trn1.32xlarge"``, ``"trn2.48xlarge"``, ``"trn2-ultraserver"``,
        ``"trn3-gen1-ultraserver"``, ``"trn3-gen2-ultraserver"``; or its record, already
        resolved (:func:`trainium_lab.specs.resolve_system`), which is not looked up again.
    n_systems : int
        How many instances or UltraServers (>= 1).
    lnc : int, optional
        Logical NeuronCore setting; default as in :func:`trainium_lab.cores.resolve_lnc`.

    Returns
    -------
    Cluster

    Raises
    ------
    ValueError
        Unknown ``system`` (the message lists them), ``n_systems`` < 1, unsupported ``lnc``.

    Examples
    --------
    >>> c = cluster("trn2-ultraserver", lnc=2)
    >>> c.n_chips, c.n_ranks, [lv.name for lv in c.levels]
    (64, 256, ['chip', 'instance', 'ultraserver', 'efa'])
    >>> c.level("ultraserver").bytes_per_s / 1e9, c.level("ultraserver").direction
    (256.0, 'not stated')
    """
    try:
        s = specs.resolve_system(system)
    except ValueError:
        s = None
    if s is None or s.key not in _LEVEL_LINKS:
        listed = ", ".join(repr(k) for k in SYSTEMS)
        raise UnknownNameError(f"system must be one of {listed}; got {system!r}")
    key = s.key
    n_systems = integer("n_systems", n_systems, minimum=1)
    c = s.chip
    lnc = cores.resolve_lnc(c, lnc)
    side = math.isqrt(s.chips_per_instance)
    if side * side != s.chips_per_instance:
        side = s.chips_per_instance  # a 1 × n row for non-square servers
    return Cluster(system=key, chip=c.key, n_systems=n_systems, lnc=lnc,
                   ranks_per_chip=c.neuron_cores // lnc, chips_per_instance=s.chips_per_instance,
                   instances_per_system=s.n_instances, grid_side=side, levels=_levels(s),
                   topology=s.topology, system_spec=s)


def _system_records(names) -> list[specs.System]:
    """The named systems' records, each checked to be one this module can lay out."""
    if isinstance(names, str):
        names = (names,)
    elif not hasattr(names, "__iter__"):
        raise ValueError(f"systems must be a list of system names, got {names!r}")
    records = []
    for name in names:
        s = specs.resolve_system(name)
        if s.key not in _LEVEL_LINKS:
            listed = ", ".join(repr(k) for k in SYSTEMS)
            raise UnknownNameError(f"system must be one of {listed}; got {name!r}")
        records.append(s)
    return records


def levels_table(systems: tuple[str, ...] | list[str] | None = None) -> pd.DataFrame:
    """The levels of each system with their per-chip bandwidth, scope and direction.

    Parameters
    ----------
    systems : sequence of str, optional
        System names (default: every entry of ``SYSTEMS``).

    Returns
    -------
    pandas.DataFrame
        One row per (system, level) with a link: ``system, level, index, link_key,
        bytes_per_s, gb_per_s, scope, direction, latency_s, switched, description, note,
        alternatives`` (``;``-separated keys of sourced figures the model does not use,
        listed by :func:`alternative_links_table`).

    Examples
    --------
    >>> t = levels_table(["trn2-ultraserver"])
    >>> t[["level", "gb_per_s", "scope"]].to_string(index=False)  # doctest: +NORMALIZE_WHITESPACE
    '      level  gb_per_s             scope\\n   instance    1024.0 per-chip aggregate\\nultraserver     256.0 per-chip aggregate\\n        efa      25.0          per chip'
    """
    names = SYSTEMS if systems is None else sequence("systems", systems, lambda _name, s: s)
    rows = []
    for s in _system_records(names):
        key = s.key
        for lv in _levels(s):
            if lv.bytes_per_s is None:
                continue
            rows.append(dict(system=key, level=lv.name, index=lv.index, link_key=lv.link_key,
                             bytes_per_s=lv.bytes_per_s, gb_per_s=lv.bytes_per_s / GB,
                             scope=lv.scope, direction=lv.direction, latency_s=lv.latency_s,
                             switched=lv.switched, description=lv.description, note=lv.note,
                             alternatives="; ".join(lv.alternatives)))
    return pd.DataFrame(rows)


def alternative_links_table(systems: tuple[str, ...] | list[str] | None = None) -> pd.DataFrame:
    """Sourced figures for a level that the model does not use, beside the one it uses.

    For the Trn3 Gen2 UltraServer the Trn3 architecture page gives NeuronLink-v4 per device
    (used, as for Gen1) and, in a separate section, per-chip PCIe Gen6 figures for the
    in-server, cross-server and cross-rack paths. The page does not reconcile the two, so
    the PCIe figures are kept here as alternatives rather than silently dropped.

    Returns
    -------
    pandas.DataFrame
        ``system, level, used_link_key, used_gb_per_s, link_key, bytes_per_s, gb_per_s,
        scope, direction, description, source``; empty for systems without alternatives.

    Examples
    --------
    >>> t = alternative_links_table(["trn3-gen2-ultraserver"])
    >>> [(r.level, r.link_key, r.gb_per_s) for r in t.itertuples()]  # doctest: +NORMALIZE_WHITESPACE
    [('instance', 'trn3-gen2-pcie-intra-server', 256.0),
     ('ultraserver', 'trn3-gen2-pcie-inter-server', 320.0),
     ('ultraserver', 'trn3-gen2-pcie-inter-rack', 128.0)]
    """
    names = SYSTEMS if systems is None else sequence("systems", systems, lambda _name, s: s)
    cols = ["system", "level", "used_link_key", "used_gb_per_s", "link_key", "bytes_per_s",
            "gb_per_s", "scope", "direction", "description", "source"]
    rows = []
    for s in _system_records(names):
        key = s.key
        for lv in _levels(s):
            for alt in lv.alternatives:
                lk = specs.link(alt)
                rows.append(dict(system=key, level=lv.name, used_link_key=lv.link_key,
                                 used_gb_per_s=lv.bytes_per_s / GB, link_key=alt,
                                 bytes_per_s=lk.bytes_per_s, gb_per_s=lk.bytes_per_s / GB,
                                 scope=lk.scope, direction=lk.direction, description=lk.description,
                                 source=specs.fact(alt, "bytes_per_s").source_title))
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------- placement

#: a few orderings to compare (innermost first); any permutation is accepted
ORDERINGS: tuple[str, ...] = ("tp-pp-dp", "tp-dp-pp", "pp-tp-dp", "dp-pp-tp", "tp-ep-pp-dp",
                              "ep-tp-pp-dp")


def parse_ordering(ordering: str) -> tuple[str, ...]:
    """Split an ordering such as ``"tp-pp-dp"`` (innermost first) into dimensions.

    ``tp``, ``pp`` and ``dp`` must each appear once; ``ep`` may appear once and is
    otherwise added outermost.

    Examples
    --------
    >>> parse_ordering("tp-pp-dp")
    ('tp', 'pp', 'dp', 'ep')
    >>> parse_ordering("tp-tp-dp")
    Traceback (most recent call last):
    ...
    ValueError: ordering must name each of tp, pp, dp once (ep optional), innermost first, e.g. 'tp-pp-dp'; got 'tp-tp-dp'
    """
    parts = tuple(p.strip().lower() for p in ordering.split("-")) if isinstance(ordering, str) else ()
    if "ep" not in parts:
        parts = parts + ("ep",)
    if sorted(parts) != sorted(KINDS):
        raise ValueError("ordering must name each of tp, pp, dp once (ep optional), innermost "
                         f"first, e.g. 'tp-pp-dp'; got {ordering!r}")
    return parts


@dataclass(frozen=True)
class Placement:
    """Every rank of a ``tp × pp × dp × ep`` job on a :class:`Cluster`. Build with :func:`place`.

    Attributes
    ----------
    cluster : Cluster
    degrees : dict
        ``{"tp": .., "pp": .., "dp": .., "ep": ..}`` in ranks (logical cores).
    ordering : tuple of str
        Dimensions innermost first.
    ranks : pandas.DataFrame
        One row per rank: ``rank``, its coordinate in each dimension (``tp``, ``pp``,
        ``dp``, ``ep``), and where it runs: ``system``, ``instance`` (within the
        system), ``chip`` (within the instance), ``core`` (logical core within the
        chip), ``global_chip``, ``row``, ``col`` (chip position in the instance grid).
    """

    cluster: Cluster
    degrees: dict[str, int]
    ordering: tuple[str, ...]

    def __repr__(self) -> str:
        degrees = ", ".join(f"{k}={v}" for k, v in self.degrees.items())
        return (f"Placement({degrees} on {self.cluster.n_systems} × {self.cluster.system}, ordering "
                f"{'-'.join(self.ordering)})")

    def _repr_markdown_(self) -> str:
        levels = ", ".join(f"{k.upper()}{self.degrees[k]} → {self.level(k).name}" for k in KINDS
                           if self.degrees[k] > 1)
        warn = f". **{len(self.problems)} problem(s)**: see `problems`" if self.problems else ""
        return (f"**{'×'.join(f'{k.upper()}{self.degrees[k]}' for k in KINDS if self.degrees[k] > 1) or 'one rank'}** "
                f"on {self.cluster.n_systems} × {self.cluster.system}, ordering "
                f"`{'-'.join(self.ordering)}`: {levels or 'no groups'}{warn}")

    @cached_property
    def ranks(self) -> pd.DataFrame:
        """The rank-to-core map (see the class docstring for its columns)."""
        return _rank_table(self.cluster, tuple(self.degrees[d] for d in self.ordering), self.ordering)

    def _members(self, kind: str) -> np.ndarray:
        """Ranks of every group of ``kind``: an array of shape (n_groups, degree)."""
        kind = choice("kind", kind, KINDS)
        shape = [self.degrees[d] for d in reversed(self.ordering)]  # outermost first
        grid = np.arange(self.cluster.n_ranks).reshape(shape)
        axis = len(shape) - 1 - self.ordering.index(kind)
        return np.moveaxis(grid, axis, -1).reshape(-1, self.degrees[kind])

    def groups(self, kind: str) -> pd.DataFrame:
        """One row per group of ``kind`` (``"tp"``, ``"pp"``, ``"dp"`` or ``"ep"``).

        Columns: ``group``, ``first_rank``, ``n_ranks``, ``n_chips`` (distinct chips),
        ``n_instances``, ``n_systems``, ``sharing`` (groups of this kind sharing each
        chip's links), ``level`` (slowest level crossed) and ``level_index``.
        """
        kind = choice("kind", kind, KINDS)
        return pd.DataFrame(self._groups[kind])

    @cached_property
    def _groups(self) -> dict[str, dict[str, np.ndarray]]:
        return {kind: self._build_groups(kind) for kind in KINDS}

    def _build_groups(self, kind: str) -> dict[str, np.ndarray]:
        c = self.cluster
        members = self._members(kind)
        gchip = members // c.ranks_per_chip
        inst = members // c.ranks_per_instance
        system = members // c.ranks_per_system
        n_chips = _distinct(gchip)
        n_inst = _distinct(inst)
        n_sys = _distinct(system)
        if c.instances_per_system == 1:
            level_index = np.where(n_sys > 1, 3, np.where(n_chips > 1, 1, 0))
        else:
            level_index = np.where(n_sys > 1, 3, np.where(n_inst > 1, 2, np.where(n_chips > 1, 1, 0)))
        sharing = (c.ranks_per_chip * n_chips) // self.degrees[kind]
        return {"group": np.arange(len(members)), "first_rank": members[:, 0],
                "n_ranks": np.full(len(members), self.degrees[kind]), "n_chips": n_chips,
                "n_instances": n_inst, "n_systems": n_sys, "sharing": np.maximum(sharing, 1),
                "level": np.array(LEVEL_NAMES)[level_index], "level_index": level_index}

    def slowest(self, kind: str) -> tuple[Level, int, int]:
        """``(level, n_chips, sharing)`` for the groups of ``kind``: the slowest level any
        group crosses, the most chips a group spans, and how many groups of this kind
        share one chip's links (ranks of one chip in different groups)."""
        kind = choice("kind", kind, KINDS)
        g = self._groups[kind]
        return (self.cluster.level(LEVEL_NAMES[int(g["level_index"].max())]),
                int(g["n_chips"].max()), int(g["sharing"].max()))

    def level(self, kind: str) -> Level:
        """The slowest level any group of ``kind`` crosses."""
        return self.slowest(kind)[0]

    @cached_property
    def _summary(self) -> pd.DataFrame:
        rows = []
        for kind in KINDS:
            lv, n_chips, sharing = self.slowest(kind)
            fewest = -(-self.degrees[kind] // self.cluster.ranks_per_chip)  # ceil
            expected = self.cluster.crossing_level(fewest)
            rows.append(dict(kind=kind, degree=self.degrees[kind],
                             n_groups=self.cluster.n_ranks // self.degrees[kind],
                             n_chips=n_chips, min_chips=fewest, sharing=sharing,
                             level=lv.name, expected_level=expected.name,
                             bytes_per_s=lv.bytes_per_s, scope=lv.scope, direction=lv.direction,
                             latency_s=lv.latency_s))
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """One row per kind: degree, chips per group, slowest level and its bandwidth.

        Columns: ``kind, degree, n_groups, n_chips, min_chips, sharing, level,
        expected_level, bytes_per_s, scope, direction, latency_s``. ``n_chips`` is the
        most chips a group spans, ``min_chips`` the fewest chips that can hold
        ``degree`` ranks and ``expected_level`` the fastest level that could hold a
        group of that many chips; ``sharing`` as in :meth:`slowest`.
        """
        return self._summary.copy()

    @property
    def problems(self) -> tuple[str, ...]:
        """Messages for TP and EP groups that cross a slower level than their size needs.

        TP and EP run collectives inside every layer, so they need the fastest links
        their size allows. PP and DP groups are placed on slower levels on purpose
        and are not flagged (see ``summary()`` for their levels).
        """
        out = []
        for row in self._summary.to_dict("records"):
            kind = row["kind"]
            if kind not in LATENCY_CRITICAL or row["degree"] == 1 or row["level"] == row["expected_level"]:
                continue
            lv, ex = self.cluster.level(row["level"]), self.cluster.level(row["expected_level"])
            if lv.bytes_per_s is not None and ex.bytes_per_s is not None and lv.bytes_per_s >= ex.bytes_per_s:
                continue  # e.g. a switched fabric: crossing costs nothing more
            have = "n/a" if lv.bytes_per_s is None else f"{lv.bytes_per_s / GB:,.0f} GB/s"
            could = "on chip" if ex.bytes_per_s is None else f"{ex.bytes_per_s / GB:,.0f} GB/s"
            spread = ("" if row["n_chips"] == row["min_chips"]
                      else f", spread over {row['n_chips']} chips instead of {row['min_chips']}")
            out.append(f"{kind.upper()} groups ({row['degree']} ranks{spread}) cross the "
                       f"{lv.name} level ({have} per chip) although they fit within the "
                       f"{ex.name} level ({could}): put {kind} innermost in the ordering")
        return tuple(out)

    def chip_groups(self, kind: str = "tp", highlight: int = 0) -> pd.DataFrame:
        """One row per chip: where it is, its ranks, and the ``kind`` groups on it.

        Columns: ``global_chip, system, instance, chip, row, col`` (position in the
        instance's grid, see the module's conventions), ``first_rank, last_rank``,
        ``group`` (the ``kind`` group of the chip's first rank), ``n_groups`` (groups of
        ``kind`` with a rank on this chip) and ``highlighted`` (the chip runs a rank of
        group ``highlight``). :func:`trainium_lab.views.chip_map` adds the labels a chart shows.

        Examples
        --------
        >>> g = place(tp=64, pp=4, system="trn2-ultraserver", lnc=2).chip_groups("tp")
        >>> len(g), int(g.n_groups.max()), int(g.highlighted.sum())
        (64, 1, 16)
        """
        kind = choice("kind", kind, KINDS)
        c = self.cluster
        highlight = integer("highlight", highlight, minimum=0, maximum=c.n_ranks // self.degrees[kind] - 1)
        group_of_rank = np.empty(c.n_ranks, dtype=int)
        members = self._members(kind)
        group_of_rank[members] = np.arange(len(members))[:, None]
        g = group_of_rank.reshape(-1, c.ranks_per_chip)
        gchip = np.arange(c.n_chips)
        chip = gchip % c.chips_per_instance
        first = gchip * c.ranks_per_chip
        return pd.DataFrame({"global_chip": gchip, "system": gchip // c.chips_per_system,
                             "instance": (gchip % c.chips_per_system) // c.chips_per_instance,
                             "chip": chip, "row": chip // c.grid_side, "col": chip % c.grid_side,
                             "first_rank": first, "last_rank": first + c.ranks_per_chip - 1,
                             "group": g[:, 0], "n_groups": _distinct(g),
                             "highlighted": (g == highlight).any(axis=1)})


def _distinct(values: np.ndarray) -> np.ndarray:
    s = np.sort(values, axis=1)
    return (np.diff(s, axis=1) != 0).sum(axis=1) + 1


def place(tp: int, pp: int = 1, dp: int = 1, ep: int = 1, *, system: str | specs.System = "trn2-ultraserver",
          n_systems: int | None = None, lnc: int | None = None,
          ordering: str = "tp-pp-dp") -> Placement:
    """Map every rank of a ``tp × pp × dp × ep`` job to (system, instance, chip, logical core).

    Parameters
    ----------
    tp, pp, dp, ep : int
        Tensor-, pipeline-, data- and expert-parallel degrees, in ranks (logical
        NeuronCores). Here EP is a dimension of its own; Megatron instead carves
        expert groups out of the data-parallel ranks.
    system : str
        One of ``SYSTEMS``.
    n_systems : int, optional
        Number of systems; by default the product of the degrees divided by the
        ranks per system, which must then be a whole number.
    lnc : int, optional
        Logical NeuronCore setting (default: the chip's default).
    ordering : str
        Dimensions innermost first, e.g. ``"tp-pp-dp"`` (TP ranks adjacent).

    Returns
    -------
    Placement

    Raises
    ------
    ValueError
        A degree < 1, a bad ``ordering``, an unknown ``system``, or degrees whose
        product (``tp × pp × dp × ep``) is not the number of ranks.

    Examples
    --------
    >>> p = place(tp=64, pp=4, system="trn2-ultraserver", lnc=2)
    >>> p.ranks.loc[70, ["rank", "tp", "pp", "instance", "chip", "core"]].tolist()
    [70, 6, 1, 1, 1, 2]
    >>> place(tp=64, pp=3, system="trn2-ultraserver", lnc=2)
    Traceback (most recent call last):
    ...
    ValueError: tp × pp × dp × ep = 192 must be a whole number of trn2-ultraserver systems (256 ranks each at lnc=2)
    """
    degrees = {k: integer(k, v, minimum=1) for k, v in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep))}
    order = parse_ordering(ordering)
    product = math.prod(degrees.values())
    base = cluster(system, 1, lnc)
    if n_systems is None:
        if product % base.ranks_per_system:
            raise ValueError(f"tp × pp × dp × ep = {product} must be a whole number of "
                             f"{base.system} systems ({base.ranks_per_system} ranks each at "
                             f"lnc={base.lnc})")
        n_systems = product // base.ranks_per_system
    c = cluster(base.system_spec, n_systems, base.lnc)
    check_degrees(c.n_ranks, **degrees)
    return Placement(c, degrees, order)


def _rank_table(c: Cluster, sizes: tuple[int, ...], order: tuple[str, ...]) -> pd.DataFrame:
    rank = np.arange(c.n_ranks)
    cols: dict[str, np.ndarray] = {"rank": rank}
    rest = rank
    coords = {}
    for d, size in zip(order, sizes):
        coords[d] = rest % size
        rest = rest // size
    for d in KINDS:
        cols[d] = coords[d]
    gchip = rank // c.ranks_per_chip
    cols["system"] = rank // c.ranks_per_system
    cols["instance"] = (rank % c.ranks_per_system) // c.ranks_per_instance
    cols["chip"] = gchip % c.chips_per_instance
    cols["core"] = rank % c.ranks_per_chip
    cols["global_chip"] = gchip
    cols["row"] = cols["chip"] // c.grid_side
    cols["col"] = cols["chip"] % c.grid_side
    return pd.DataFrame(cols)


def all_orderings(include_ep: bool = False) -> tuple[str, ...]:
    """Every ordering of the dimensions (innermost first), for sweeps.

    >>> len(all_orderings()), len(all_orderings(include_ep=True))
    (6, 24)
    """
    dims = KINDS if include_ep else KINDS[:3]
    return tuple("-".join(p) for p in itertools.permutations(dims))


# --------------------------------------------------------------------- spans in closed form


def _max_units(stride: int, degree: int, unit: int, n_ranks: int) -> int:
    """Most distinct units (chips, instances, systems of ``unit`` ranks) any group spans.

    A group is ``r0 + stride·i`` for ``i < degree``; group starts ``r0`` are
    ``a + b·stride·degree`` with ``a < stride`` and ``b < n_ranks / (stride·degree)``.
    If ``stride >= unit`` consecutive members sit in different units (``degree`` of
    them). Otherwise members climb through the units one at a time, so a group
    starting at offset ``ρ = r0 mod unit`` spans ``⌊(ρ + stride·(degree − 1)) / unit⌋ + 1``
    units; the largest offset a start can have is ``min(max_b(b·stride·degree mod unit)
    + stride − 1, unit − 1)``.
    """
    if degree == 1:
        return 1
    if stride >= unit:
        return degree
    period = stride * degree
    n_b = min(n_ranks // period, unit)
    top = int((np.arange(n_b, dtype=np.int64) * period % unit).max())
    rho = min(top + stride - 1, unit - 1)
    return (rho + stride * (degree - 1)) // unit + 1


@cache
def _spans(system: specs.System, n_systems: int, lnc: int, degrees: tuple[int, ...],
           order: tuple[str, ...]) -> dict[str, tuple[int, int, int, int, int]]:
    """``{kind: (level_index, n_chips, n_instances, n_systems, sharing)}``, maxima over groups."""
    c = cluster(system, n_systems, lnc)
    deg = dict(zip(order, degrees))
    out = {}
    stride = 1
    for kind in order:
        d = deg[kind]
        chips = _max_units(stride, d, c.ranks_per_chip, c.n_ranks)
        inst = _max_units(stride, d, c.ranks_per_instance, c.n_ranks)
        syst = _max_units(stride, d, c.ranks_per_system, c.n_ranks)
        if syst > 1:
            index = 3
        elif c.instances_per_system > 1 and inst > 1:
            index = 2
        else:
            index = 1 if chips > 1 else 0
        out[kind] = (index, chips, inst, syst, max((c.ranks_per_chip * chips) // d, 1))
        stride *= d
    return out


def group_spans(tp: int, pp: int = 1, dp: int = 1, ep: int = 1, *, system: str | specs.System = "trn2-ultraserver",
                n_systems: int | None = None, lnc: int | None = None,
                ordering: str = "tp-pp-dp") -> pd.DataFrame:
    """Where the groups of each kind land, in closed form: no rank table, any cluster size.

    The same answer as :meth:`Placement.slowest` (and the maxima of
    :meth:`Placement.groups`) for every kind, computed from the degrees alone: the
    groups of a kind are arithmetic progressions of ranks (stride = the product of
    the degrees inside it in ``ordering``), so how many chips, instances and systems
    the widest one spans follows from the stride, the degree and the unit sizes.
    A placement of 100,000 chips takes microseconds instead of building a
    400,000-row rank table; the layout planner uses it.

    Parameters
    ----------
    tp, pp, dp, ep, system, n_systems, lnc, ordering :
        As in :func:`place`.

    Returns
    -------
    pandas.DataFrame
        One row per kind: ``kind, degree, n_chips, n_instances, n_systems, sharing, level,
        level_index`` (most chips, instances and systems a group spans; groups sharing a
        chip's links; the slowest level a group crosses).

    Examples
    --------
    >>> t = group_spans(tp=64, pp=4, dp=2, lnc=2)
    >>> t.set_index("kind").loc[["tp", "pp", "dp"], ["n_chips", "level"]].values.tolist()
    [[16, 'instance'], [4, 'ultraserver'], [2, 'efa']]
    >>> big = group_spans(tp=16, pp=12, dp=256, ep=8, n_systems=1536, lnc=2, ordering="tp-ep-pp-dp")
    >>> big.set_index("kind").loc[["ep"], ["n_chips", "level"]].values.tolist()
    [[8, 'ultraserver']]
    """
    p = place(tp, pp, dp, ep, system=system, n_systems=n_systems, lnc=lnc, ordering=ordering)
    c, degrees, order = p.cluster, p.degrees, p.ordering  # validated; p's rank table is never built
    spans = _spans(c.system_spec, c.n_systems, c.lnc, tuple(degrees[k] for k in order), order)
    rows = []
    for kind in KINDS:
        index, chips, inst, syst, sharing = spans[kind]
        rows.append(dict(kind=kind, degree=degrees[kind], n_chips=chips, n_instances=inst, n_systems=syst,
                         sharing=sharing, level=LEVEL_NAMES[index], level_index=index))
    return pd.DataFrame(rows)
