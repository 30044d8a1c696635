"""Sourced hardware data: ``data/*.csv`` loaded once into frozen dataclasses.

Every hardware number in the course reaches a model or a notebook through this
module. Each value in ``data/`` carries its unit and its source; values on which
AWS's own pages disagree are kept as ``alternative`` rows beside the ``used`` one.

>>> from trainium_lab.units import GiB
>>> chip("trn2").hbm_bytes == 96 * GiB
True
>>> chip("trn2").dense_flops_per_s["bf16"]
667000000000000.0
>>> system("trn2.48xlarge").n_chips
16
"""

from __future__ import annotations

import csv
import functools
import os
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from trainium_lab import dtypes
from trainium_lab import units as u
from trainium_lab._validate import UnknownNameError

__all__ = [
    "DATA_DIR", "Fact", "DtypeTable", "Chip", "NeuronCore", "System", "Link", "Accelerator",
    "chip", "chips", "core", "system", "systems", "system_readings", "link", "links", "accelerator",
    "accelerators", "fact", "facts", "all_facts", "alternatives", "source", "read_data_csv",
    "lookup", "resolve_system", "resolve_chip",
]

def _data_dir():
    """The package's data folder (``trainium_lab/data``), found with ``importlib.resources``
    so it works from a wheel as well as from a checkout; ``TRAINIUM_LAB_DATA`` overrides it."""
    override = os.environ.get("TRAINIUM_LAB_DATA")
    return Path(override) if override else resources.files("trainium_lab").joinpath("data")


#: where ``data/*.csv`` are read from (a ``Path`` or an ``importlib.resources`` Traversable)
DATA_DIR = _data_dir()


def _open_data(filename: str):
    return DATA_DIR.joinpath(filename).open("r", newline="", encoding="utf-8")

#: factor from each unit used in data/ to base units (bytes, s, FLOP/s, bytes/s)
UNIT_FACTORS: dict[str, float] = {
    "count": 1.0, "TFLOPS": u.TFLOPS, "PFLOPS": u.PFLOPS,
    "KiB": u.KiB, "MiB": u.MiB, "GiB": u.GiB, "GB": u.GB,
    "TB/s": u.TB, "GB/s": u.GB, "GiB/s": u.GiB, "Gbps": u.Gbps,
    "GHz": u.GHz, "us": u.us, "USD/hour": 1.0,
}
TEXT_UNITS = ("text", "list")

#: every dtype spelling accepted as a key of a DtypeTable, mapped to the table's own key; derived
#: from :mod:`trainium_lab.dtypes`, the one vocabulary of number formats
DTYPE_ALIASES: dict[str, str] = {a: dtypes.NUMBER_FORMATS[c].rate_key
                                 for a, c in dtypes.ALIASES.items()}


@dataclass(frozen=True)
class Fact:
    """One sourced value: as written in ``data/`` and in base units."""

    entity: str
    field: str
    value: str
    unit: str
    status: str
    source_id: str
    source_title: str
    source_reference: str
    source_tier: str
    note: str

    @property
    def base_value(self) -> float | str | tuple[str, ...] | None:
        """The value converted to base units (floats), a string, or a tuple for lists."""
        return _convert(self.value, self.unit)


def _convert(value: str, unit: str):
    if unit == "text":
        return value
    if unit == "list":
        return tuple(v for v in value.split(";") if v)
    if value == "":
        return None
    return float(value.replace(",", "")) * UNIT_FACTORS[unit]


class DtypeTable(Mapping[str, float]):
    """A read-only mapping from dtype to a rate (FLOP/s) that accepts aliases.

    ``table["bfloat16"]`` and ``table["bf16"]`` are the same entry. An absent
    dtype raises ``ValueError`` (also a ``KeyError``) listing those present.
    """

    def __init__(self, owner: str, quantity: str, values: Mapping[str, float]):
        self._owner, self._quantity, self._values = owner, quantity, dict(values)

    def key(self, dtype: str) -> str:
        """The table's key for ``dtype`` (``"bfloat16"`` → ``"bf16"``; :func:`dtypes.rate_key`)."""
        try:
            # a format with a rate of its own on this chip (Trainium2's E3M4 runs at the BF16 rate,
            # not the FP8 one) is looked up by its canonical name first, then by its rate key
            own = dtypes.canonical(dtype)
            canonical = own if own in self._values else dtypes.rate_key(dtype)
        except ValueError:
            canonical = None
        if canonical is None or canonical not in self._values:
            listed = ", ".join(self._values)
            raise UnknownNameError(
                f"dtype {dtype!r} has no {self._quantity} for {self._owner}; known: {listed}")
        return canonical

    def __getitem__(self, dtype: str) -> float:
        return self._values[self.key(dtype)]

    def __contains__(self, dtype: object) -> bool:
        try:
            self.key(dtype)  # type: ignore[arg-type]
        except ValueError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v / u.TFLOPS:g}e12" for k, v in self._values.items())
        return f"DtypeTable({inner})"

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DtypeTable) and self._values == other._values


def _rate(table: DtypeTable, dtype: str) -> str:
    """A table's rate for ``dtype`` formatted for a summary, or "n/a"."""
    return u.format_flop_rate(table[dtype]) if dtype in table else "n/a"


@dataclass(frozen=True)
class NeuronCore:
    """One NeuronCore generation (per-core figures)."""

    name: str
    chips: tuple[str, ...]
    engines: tuple[str, ...]
    tensor_rows: int
    tensor_cols: int
    dense_flops_per_s: DtypeTable
    sparse_flops_per_s: DtypeTable
    vector_fp32_flops_per_s: float
    scalar_fp32_flops_per_s: float
    gpsimd: str
    clocks_hz: Mapping[str, float]
    sbuf_bytes: float
    sbuf_partitions: int
    psum_bytes: float

    @property
    def sbuf_bytes_per_partition(self) -> float:
        """SBUF bytes in each of the partitions."""
        return self.sbuf_bytes / self.sbuf_partitions

    @property
    def psum_bytes_per_partition(self) -> float:
        """PSUM bytes in each partition (PSUM has as many partitions as SBUF)."""
        return self.psum_bytes / self.sbuf_partitions

    def __repr__(self) -> str:
        return (f"NeuronCore({self.name!r}: {self.tensor_rows} × {self.tensor_cols} tensor array, "
                f"{_rate(self.dense_flops_per_s, 'bf16')} dense BF16, SBUF "
                f"{u.format_bytes(self.sbuf_bytes)} in {self.sbuf_partitions} partitions)")

    def _repr_markdown_(self) -> str:
        return (f"**{self.name}** (in {', '.join(self.chips)}): {self.tensor_rows} × {self.tensor_cols} "
                f"tensor array, dense BF16 {_rate(self.dense_flops_per_s, 'bf16')}; SBUF "
                f"{u.format_bytes(self.sbuf_bytes)} in {self.sbuf_partitions} partitions, PSUM "
                f"{u.format_bytes(self.psum_bytes)}; engines: {', '.join(self.engines)}")


@dataclass(frozen=True)
class Chip:
    """One Trainium chip generation (per-chip figures)."""

    key: str
    name: str
    core_version: str
    neuron_cores: int
    dense_flops_per_s: DtypeTable
    sparse_flops_per_s: DtypeTable
    hbm_bytes: float
    hbm_bytes_per_s: float
    hbm_stacks: int
    dma_bytes_per_s: float
    dma_engines: int
    cc_cores: int
    sbuf_bytes: float
    neuronlink_version: str
    neuronlink_ports: int
    neuronlink_bytes_per_s: float
    efa_bytes_per_s: float | None
    lnc_options: tuple[int, ...]
    lnc_default: int | None
    rounding_modes: tuple[str, ...]

    @property
    def core(self) -> NeuronCore:
        """The chip's NeuronCore generation."""
        return core(self.core_version)

    def __repr__(self) -> str:
        return (f"Chip({self.key!r}: {self.name}, {self.neuron_cores} × {self.core_version}, HBM "
                f"{u.format_bytes(self.hbm_bytes)} at {u.format_bandwidth(self.hbm_bytes_per_s)}, "
                f"{_rate(self.dense_flops_per_s, 'bf16')} dense BF16)")

    def _repr_markdown_(self) -> str:
        rates = ", ".join(f"{k.upper()} {u.format_flop_rate(v)}" for k, v in self.dense_flops_per_s.items())
        lnc = ("no LNC setting" if not self.lnc_options else
               f"LNC {' or '.join(map(str, self.lnc_options))}, "
               + (f"default {self.lnc_default}" if self.lnc_default else "no default stated"))
        return (f"**{self.name}** (`{self.key}`): {self.neuron_cores} {self.core_version} cores ({lnc}); "
                f"HBM {u.format_bytes(self.hbm_bytes)} at {u.format_bandwidth(self.hbm_bytes_per_s)}; "
                f"dense {rates}; NeuronLink {u.format_bandwidth(self.neuronlink_bytes_per_s)} per chip")


@dataclass(frozen=True)
class System:
    """An instance or UltraServer."""

    key: str
    name: str
    chip_key: str
    kind: str
    n_chips: int
    n_instances: int
    vcpus: int
    host_memory_bytes: float
    hbm_bytes_total: float
    hbm_bytes_per_s_total: float
    dense_flops_per_s_total: DtypeTable
    efa_bytes_per_s_total: float | None
    topology: str
    on_demand_usd_per_hour: float | None = None
    #: for a second reading of another system's published figures (Trn3 Gen2's PCIe fabric):
    #: that system's key; its hardware facts are that system's, only the links differ (topology)
    reading_of: str = ""

    def __hash__(self) -> int:
        # equal systems share a key; hashing the key keeps caches keyed on a record cheap
        return hash(self.key)

    @property
    def chip(self) -> Chip:
        """The system's chip (its record, by the key the system holds: no name is resolved)."""
        return _chips()[self.chip_key]

    @property
    def chips_per_instance(self) -> int:
        """Chips in each instance (or server) of the system."""
        return self.n_chips // self.n_instances

    def __repr__(self) -> str:
        return (f"System({self.key!r}: {self.n_chips} × {self.chip_key} in {self.n_instances} "
                f"{self.kind if self.n_instances == 1 else 'instances'}, HBM "
                f"{u.format_bytes(self.hbm_bytes_total)} in all)")

    def _repr_markdown_(self) -> str:
        price = ("" if self.on_demand_usd_per_hour is None
                 else f"; on demand ${self.on_demand_usd_per_hour:,.2f} per hour")
        return (f"**{self.name}** (`{self.key}`, {self.kind}): {self.n_chips} chips in "
                f"{self.n_instances} instance{'s' if self.n_instances != 1 else ''}; HBM "
                f"{u.format_bytes(self.hbm_bytes_total)} at {u.format_bandwidth(self.hbm_bytes_per_s_total)} "
                f"in all; dense BF16 {_rate(self.dense_flops_per_s_total, 'bf16')}; EFA "
                f"{u.format_bandwidth(self.efa_bytes_per_s_total)}; topology: {self.topology}{price}")


@dataclass(frozen=True)
class Link:
    """One level of interconnect, with its scope and direction as the source gives them."""

    key: str
    system: str
    level: str
    description: str
    bytes_per_s: float
    scope: str
    direction: str
    latency_s: float | None = None

    def __repr__(self) -> str:
        return (f"Link({self.key!r}: {self.level} of {self.system}, "
                f"{u.format_bandwidth(self.bytes_per_s)} {self.scope}, direction {self.direction})")

    def _repr_markdown_(self) -> str:
        lat = "" if self.latency_s is None else f", latency {u.format_seconds(self.latency_s)}"
        return (f"**{self.key}** ({self.level} of {self.system}): {u.format_bandwidth(self.bytes_per_s)}, "
                f"{self.scope}, direction {self.direction}{lat}. {self.description}")


@dataclass(frozen=True)
class Accelerator:
    """A comparison accelerator (GPU or TPU)."""

    key: str
    name: str
    vendor: str
    dense_flops_per_s: DtypeTable
    hbm_bytes: float
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float
    scale_up_direction: str
    scale_up: str

    def __repr__(self) -> str:
        return (f"Accelerator({self.key!r}: {self.name}, HBM {u.format_bytes(self.hbm_bytes)} at "
                f"{u.format_bandwidth(self.hbm_bytes_per_s)}, {_rate(self.dense_flops_per_s, 'bf16')} "
                f"dense BF16)")

    def _repr_markdown_(self) -> str:
        return (f"**{self.name}** (`{self.key}`, {self.vendor}): HBM {u.format_bytes(self.hbm_bytes)} at "
                f"{u.format_bandwidth(self.hbm_bytes_per_s)}; dense BF16 "
                f"{_rate(self.dense_flops_per_s, 'bf16')}; scale-up {self.scale_up} "
                f"{u.format_bandwidth(self.scale_up_bytes_per_s)} ({self.scale_up_direction})")


# --------------------------------------------------------------------------- loading

_KIND_FILES = {"chip": "chips.csv", "core": "cores.csv", "system": "systems.csv",
               "link": "links.csv", "accelerator": "accelerators.csv"}


@functools.cache
def _sources() -> dict[str, dict[str, str]]:
    with _open_data("sources.csv") as fh:
        return {row["source_id"]: row for row in csv.DictReader(fh)}


@functools.cache
def _facts(kind: str) -> tuple[Fact, ...]:
    sources = _sources()
    out = []
    with _open_data(_KIND_FILES[kind]) as fh:
        for row in csv.DictReader(fh):
            src = sources[row["source_id"]]
            out.append(Fact(row["entity"], row["field"], row["value"], row["unit"],
                            row["status"], row["source_id"], src["title"], src["reference"],
                            src["tier"], row["note"]))
    return tuple(out)


def all_facts() -> tuple[Fact, ...]:
    """Every fact of the five fact files (used and alternative rows), in file order."""
    return tuple(f for kind in _KIND_FILES for f in _facts(kind))


def _used(kind: str) -> dict[str, dict[str, Fact]]:
    table: dict[str, dict[str, Fact]] = {}
    for f in _facts(kind):
        if f.status == "used":
            table.setdefault(f.entity, {})[f.field] = f
    return table


def _get(fields: Mapping[str, Fact], name: str, default=None):
    f = fields.get(name)
    return default if f is None else f.base_value


def _table(owner: str, quantity: str, fields: Mapping[str, Fact], prefix: str) -> DtypeTable:
    return DtypeTable(owner, quantity, {k.split(".", 1)[1]: float(f.base_value)  # type: ignore[arg-type]
                                        for k, f in fields.items() if k.startswith(prefix + ".")})


def _int(value) -> int | None:
    return None if value is None else int(value)


@functools.cache
def _chips() -> dict[str, Chip]:
    out = {}
    for key, f in _used("chip").items():
        out[key] = Chip(
            key=key, name=_get(f, "display_name"), core_version=_get(f, "core_version"),
            neuron_cores=int(_get(f, "neuron_cores")),
            dense_flops_per_s=_table(key, "dense_flops_per_s", f, "dense_flops_per_s"),
            sparse_flops_per_s=_table(key, "sparse_flops_per_s", f, "sparse_flops_per_s"),
            hbm_bytes=_get(f, "hbm_bytes"), hbm_bytes_per_s=_get(f, "hbm_bytes_per_s"),
            hbm_stacks=int(_get(f, "hbm_stacks")), dma_bytes_per_s=_get(f, "dma_bytes_per_s"),
            dma_engines=int(_get(f, "dma_engines")), cc_cores=int(_get(f, "cc_cores")),
            sbuf_bytes=_get(f, "sbuf_bytes"), neuronlink_version=_get(f, "neuronlink_version"),
            neuronlink_ports=int(_get(f, "neuronlink_ports")),
            neuronlink_bytes_per_s=_get(f, "neuronlink_bytes_per_s"),
            efa_bytes_per_s=_get(f, "efa_bytes_per_s"),
            lnc_options=tuple(int(x) for x in _get(f, "lnc_options", ())),
            lnc_default=_int(_get(f, "lnc_default")),
            rounding_modes=_get(f, "rounding_modes", ()),
        )
    return out


@functools.cache
def _cores() -> dict[str, NeuronCore]:
    out = {}
    for key, f in _used("core").items():
        out[key] = NeuronCore(
            name=key, chips=_get(f, "chips"), engines=_get(f, "engines"),
            tensor_rows=int(_get(f, "tensor_rows")), tensor_cols=int(_get(f, "tensor_cols")),
            dense_flops_per_s=_table(key, "dense_flops_per_s", f, "dense_flops_per_s"),
            sparse_flops_per_s=_table(key, "sparse_flops_per_s", f, "sparse_flops_per_s"),
            vector_fp32_flops_per_s=_get(f, "vector_flops_per_s.fp32"),
            scalar_fp32_flops_per_s=_get(f, "scalar_flops_per_s.fp32"),
            gpsimd=_get(f, "gpsimd"),
            clocks_hz={e: _get(f, f"{e}_clock_hz") for e in ("tensor", "vector", "scalar", "gpsimd")},
            sbuf_bytes=_get(f, "sbuf_bytes"), sbuf_partitions=int(_get(f, "sbuf_partitions")),
            psum_bytes=_get(f, "psum_bytes"),
        )
    return out


@functools.cache
def _systems() -> dict[str, System]:
    out = {}
    used = _used("system")
    for key, own in used.items():
        # a reading (or a variant instance) shares every fact of the system it names that it does not give
        base = used.get(_get(own, "reading_of") or _get(own, "variant_of") or "", {})
        f = {**base, **own}
        out[key] = System(
            key=key, name=_get(f, "display_name"), chip_key=_get(f, "chip"), kind=_get(f, "kind"),
            n_chips=int(_get(f, "n_chips")), n_instances=int(_get(f, "n_instances")),
            vcpus=int(_get(f, "vcpus")), host_memory_bytes=_get(f, "host_memory_bytes"),
            hbm_bytes_total=_get(f, "hbm_bytes_total"),
            hbm_bytes_per_s_total=_get(f, "hbm_bytes_per_s_total"),
            dense_flops_per_s_total=_table(key, "dense_flops_per_s_total", f, "dense_flops_per_s_total"),
            efa_bytes_per_s_total=_get(f, "efa_bytes_per_s_total"), topology=_get(f, "topology"),
            on_demand_usd_per_hour=_get(f, "on_demand_usd_per_hour"),
            reading_of=_get(own, "reading_of") or "",
        )
    return out


@functools.cache
def _links() -> dict[str, Link]:
    return {key: Link(key=key, system=_get(f, "system"), level=_get(f, "level"),
                      description=_get(f, "description"), bytes_per_s=_get(f, "bytes_per_s"),
                      scope=_get(f, "scope"), direction=_get(f, "direction"),
                      latency_s=_get(f, "latency_s"))
            for key, f in _used("link").items()}


@functools.cache
def _accelerators() -> dict[str, Accelerator]:
    return {key: Accelerator(
        key=key, name=_get(f, "display_name"), vendor=_get(f, "vendor"),
        dense_flops_per_s=_table(key, "dense_flops_per_s", f, "dense_flops_per_s"),
        hbm_bytes=_get(f, "hbm_bytes"), hbm_bytes_per_s=_get(f, "hbm_bytes_per_s"),
        scale_up_bytes_per_s=_get(f, "scale_up_bytes_per_s"),
        scale_up_direction=_get(f, "scale_up_direction"), scale_up=_get(f, "scale_up"))
        for key, f in _used("accelerator").items()}


def lookup(kind: str, name: object, table: Mapping, aliases: Mapping[str, str] | None = None):
    """Find ``name`` in ``table`` by key, alias or display name, ignoring case.

    Shared by every lookup-by-name in the package, so each raises the same
    ``ValueError`` (``"<kind> must be one of ...; got ..."``) for an unknown name.
    """
    if not isinstance(table, Mapping):
        raise ValueError(f"table must be a mapping of names to {kind} objects, got {type(table).__name__}")
    aliases = aliases or {}
    if not isinstance(aliases, Mapping):
        raise ValueError(f"aliases must be a mapping of names to keys, got {type(aliases).__name__}")
    if isinstance(name, str) and name.strip():
        wanted = name.strip().lower()
        for key in table:
            if wanted == key.lower():
                return table[key]
        if wanted in aliases:
            return table[aliases[wanted]]
        for key, obj in table.items():
            if hasattr(obj, "name") and wanted == str(obj.name).lower():
                return obj
    listed = ", ".join(repr(k) for k in table)
    raise UnknownNameError(f"{kind} must be one of {listed}; got {name!r}")


_CHIP_ALIASES = {"trainium": "trn1", "trainium1": "trn1", "trainium2": "trn2", "trainium3": "trn3",
                 "inferentia2": "inf2"}
_CORE_ALIASES = {"v2": "NeuronCore-v2", "v3": "NeuronCore-v3", "v4": "NeuronCore-v4"}
_SYSTEM_ALIASES = {"trn2u.48xlarge": "trn2.48xlarge", "trn2 ultraserver": "trn2-ultraserver",
                   "trn3 gen1 ultraserver": "trn3-gen1-ultraserver",
                   "trn3 gen2 ultraserver": "trn3-gen2-ultraserver"}


@functools.cache
def _inference_chips() -> frozenset[str]:
    """Chips whose ``family`` fact is Inferentia: left out of :func:`chips` and :func:`systems` unless asked for."""
    return frozenset(k for k, f in _used("chip").items() if _get(f, "family") == "Inferentia")


def chip(name: str) -> Chip:
    """Look up a chip: ``"trn1"``, ``"trn2"``, ``"trn3"``, ``"inf2"`` (or ``"Trainium2"``...).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.

    Examples
    --------
    >>> chip("Trainium2").neuron_cores
    8
    """
    return resolve_chip(name)


def resolve_system(system: str | System) -> System:
    """The one resolver of a system at an API's edge: a :class:`System` passes through, a name
    (key, alias or display name) is looked up with :func:`system`.

    A public function that takes a system calls this once on entry and passes the record inward;
    inner functions take the record and never look the name up again.

    >>> s = resolve_system("trn2.48xlarge")
    >>> resolve_system(s) is s, s.key
    (True, 'trn2.48xlarge')
    """
    if isinstance(system, System):
        return system
    return lookup("system", system, _systems(), _SYSTEM_ALIASES)


def resolve_chip(chip: str | Chip) -> Chip:
    """The one resolver of a chip at an API's edge: a :class:`Chip` passes through, a name is
    looked up with :func:`chip` (see :func:`resolve_system`).

    >>> c = resolve_chip("Trainium2")
    >>> resolve_chip(c) is c, c.key
    (True, 'trn2')
    """
    if isinstance(chip, Chip):
        return chip
    return lookup("chip", chip, _chips(), _CHIP_ALIASES)


def chips(include_inferentia: bool = False) -> tuple[Chip, ...]:
    """The Trainium chips, oldest first; with ``include_inferentia`` also Inferentia2.

    Inferentia2 (``"inf2"``) is an inference chip: :func:`chip` finds it and the serving models
    take it, while the tables and pickers that compare Trainium generations (and the planner's
    training platforms) list the Trainium chips only.

    >>> [c.key for c in chips()], [c.key for c in chips(include_inferentia=True)][-1]
    (['trn1', 'trn2', 'trn3'], 'inf2')
    """
    if include_inferentia not in (True, False):
        raise ValueError(f"include_inferentia must be True or False, got {include_inferentia!r}")
    return tuple(c for c in _chips().values() if include_inferentia or c.key not in _inference_chips())


def core(name: str) -> NeuronCore:
    """Look up a NeuronCore generation: ``"NeuronCore-v3"`` or ``"v3"``.

    >>> core("v3").sbuf_partitions
    128
    """
    return lookup("core", name, _cores(), _CORE_ALIASES)


def system(name: str) -> System:
    """Look up a system: ``"trn1.32xlarge"``, ``"trn2.48xlarge"``, ``"trn2-ultraserver"``,
    ``"trn3-gen1-ultraserver"``, ``"trn3-gen2-ultraserver"``.

    >>> system("trn2-ultraserver").n_instances
    4
    """
    return resolve_system(name)


def systems(include_inferentia: bool = False) -> tuple[System, ...]:
    """The Trainium systems in data order (not the second readings of a system: see
    :func:`system_readings`); with ``include_inferentia`` also the inf2 instances.

    >>> [s.key for s in systems(include_inferentia=True) if s.chip_key == "inf2"][-1]
    'inf2.48xlarge'
    """
    if include_inferentia not in (True, False):
        raise ValueError(f"include_inferentia must be True or False, got {include_inferentia!r}")
    return tuple(s for s in _systems().values() if not s.reading_of
                 and (include_inferentia or s.chip_key not in _inference_chips()))


def system_readings(name: str) -> tuple[System, ...]:
    """A system and every other reading of its published figures (Trn3 Gen2: NeuronLink-v4 per
    device, or the PCIe switch fabric per level).

    >>> [s.key for s in system_readings("trn3-gen2-ultraserver")]
    ['trn3-gen2-ultraserver', 'trn3-gen2-ultraserver-pcie', 'trn3-gen2-ultraserver-pcie-inter-rack']
    """
    s = system(name)
    base = s.reading_of or s.key
    return tuple(x for x in _systems().values() if x.key == base or x.reading_of == base)


def link(name: str) -> Link:
    """Look up one interconnect level by key, e.g. ``"trn2-neuronlink-intra"``.

    >>> link("trn2-efa").bytes_per_s / 1e9
    25.0
    """
    return lookup("link", name, _links(), {})


def links(system_name: str | None = None) -> tuple[Link, ...]:
    """All interconnect levels, or those recorded for one system."""
    if system_name is None:
        return tuple(_links().values())
    key = system(system_name).key
    return tuple(lk for lk in _links().values() if lk.system == key)


def accelerator(name: str) -> Accelerator:
    """Look up a comparison accelerator: ``"h100"``, ``"h200"``, ``"b200"``, ``"tpu-v5p"``,
    ``"tpu-v6e"``."""
    return lookup("accelerator", name, _accelerators(), {})


def accelerators() -> tuple[Accelerator, ...]:
    """All comparison accelerators."""
    return tuple(_accelerators().values())


def fact(entity: str, field_name: str, kind: str | None = None) -> Fact:
    """The ``used`` fact for ``entity``/``field_name``, with its source.

    >>> f = fact("trn2", "hbm_bytes_per_s")
    >>> f.value, f.unit, f.source_title
    ('2.9', 'TB/s', 'Trainium2 Architecture (AWS Neuron docs)')
    """
    for k in (list(_KIND_FILES) if kind is None else [_lookup_kind(kind)]):
        for f in _facts(k):
            if f.entity == entity and f.field == field_name and f.status == "used":
                return f
    raise UnknownNameError(f"field_name {field_name!r} is not recorded for entity {entity!r}")


def alternatives(entity: str, field_name: str) -> tuple[Fact, ...]:
    """Values other AWS (or vendor) pages give for the same fact, if any."""
    fact(entity, field_name)  # validates the pair
    return tuple(f for k in _KIND_FILES for f in _facts(k)
                 if f.entity == entity and f.field == field_name and f.status == "alternative")


def source(entity: str, field_name: str) -> str:
    """A one-line citation for a fact: title and reference."""
    f = fact(entity, field_name)
    return f"{f.source_title} [{f.source_reference}]"


def facts(kind: str | None = None, entity: str | None = None):
    """All facts as a tidy DataFrame with their units, status and sources.

    Parameters
    ----------
    kind : {"chip", "core", "system", "link", "accelerator"}, optional
        Restrict to one file of ``data/``.
    entity : str, optional
        Restrict to one entity (``"trn2"``, ``"trn2.48xlarge"``...).

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, entity, field, value, unit, status, source, reference, tier, note``.
    """
    import pandas as pd

    kinds = list(_KIND_FILES) if kind is None else [_lookup_kind(kind)]
    rows = [dict(kind=k, entity=f.entity, field=f.field, value=f.value, unit=f.unit,
                 status=f.status, source=f.source_title, reference=f.source_reference,
                 tier=f.source_tier, note=f.note)
            for k in kinds for f in _facts(k) if entity is None or f.entity == entity]
    if entity is not None and not rows:
        raise UnknownNameError(f"entity {entity!r} is not in data/")
    return pd.DataFrame(rows)


def _lookup_kind(kind: str) -> str:
    if not isinstance(kind, str) or kind not in _KIND_FILES:
        listed = ", ".join(repr(k) for k in _KIND_FILES)
        raise UnknownNameError(f"kind must be one of {listed}; got {kind!r}")
    return kind


def read_data_csv(filename: str):
    """Read another table of ``data/`` (model presets, failure data...) with its sources.

    The file must have a ``source_id`` column whose ids are in ``data/sources.csv``;
    the returned DataFrame gains ``source`` and ``reference`` columns.
    """
    if not isinstance(filename, str):
        raise UnknownNameError(f"filename must be the name of a csv file in data/; got {filename!r}")
    # read once per kernel (widgets ask on every update); each caller gets its own copy
    return _read_data_csv(filename).copy()


@functools.lru_cache(maxsize=None)
def _read_data_csv(filename: str):
    import pandas as pd

    known = sorted(p.name for p in DATA_DIR.iterdir() if p.name.endswith(".csv"))
    if filename not in known:
        raise UnknownNameError(f"filename must be one of {', '.join(known)}; got {filename!r}")
    with _open_data(filename) as fh:
        df = pd.read_csv(fh, keep_default_na=False)
    sources = _sources()
    unknown = sorted(set(df["source_id"]) - set(sources))
    if unknown:
        raise ValueError(f"{filename}: source_id not in sources.csv: {unknown}")
    df["source"] = [sources[s]["title"] for s in df["source_id"]]
    df["reference"] = [sources[s]["reference"] for s in df["source_id"]]
    return df


@dataclass(frozen=True)
class Calibrated:
    """One calibrated or sourced model parameter (``data/calibration.csv``), in base units."""

    name: str
    value: float
    low: float
    high: float
    unit: str
    fitted_on: str
    procedure: str
    source_id: str

    def __repr__(self) -> str:
        rng = "" if self.low != self.low else f" (range {self.low:.4g} to {self.high:.4g})"
        return f"Calibrated({self.name} = {self.value:.4g} {self.unit}{rng}; {self.fitted_on})"


@functools.lru_cache(maxsize=1)
def _calibration() -> dict[str, Calibrated]:
    df = read_data_csv("calibration.csv")
    num = lambda v: float(v) if str(v).strip() else float("nan")  # noqa: E731
    return {r["parameter"]: Calibrated(r["parameter"], float(r["value"]), num(r["low"]), num(r["high"]), r["unit"],
                                       r["fitted_on"], r["procedure"], r["source_id"])
            for _, r in df.iterrows()}


def calibration(name: str) -> Calibrated:
    """A calibrated default (efficiency, latency) with its range and how it was obtained.

    One home for every fitted or sourced performance parameter; ``trainium_lab.reality`` owns
    the fit (``reality.fit()``) and ``tools/calibrate.py`` writes the table.

    Examples
    --------
    >>> calibration("hop_latency_min_s").value
    1e-06
    """
    table = _calibration()
    if not isinstance(name, str) or name not in table:
        raise UnknownNameError(f"name must be one of {', '.join(sorted(table))}; got {name!r}")
    return table[name]


def calibrations() -> tuple[Calibrated, ...]:
    """Every row of ``data/calibration.csv``."""
    return tuple(_calibration().values())
