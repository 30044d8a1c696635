"""Chips and NeuronCores: counting physical and logical cores (chapter 01).

- Counting (here): a Trainium2 or Trainium3 chip's physical NeuronCores can be grouped into
  logical NeuronCores (LNC = physical cores per logical core); the runtime then starts one
  rank per logical core. Trainium1 has no LNC setting, so its logical cores are its
  physical ones. No AWS page states Trainium3's default, so a Trainium3 count needs an
  explicit ``lnc``.
- Comparing: the three generations and the comparison accelerators side by side
  (:mod:`trainium_lab.generations`, re-exported here).
- Checking: a published figure or phrase tested against ``data/``
  (:mod:`trainium_lab.claim_checks`, their one home).

Every name chapter 01 uses as ``cores.X`` keeps working.

References
----------
AWS Neuron docs, "Logical NeuronCore configuration" (LNC 1 or 2 on Trn2, default 2;
applies only to Trn2 and Trn3); "Trainium2 Architecture", "Trainium3 Architecture",
"Amazon EC2 Trn2 Architecture", "Collective communication: System Connectivity".
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import pandas as pd

from trainium_lab import specs
from trainium_lab import units as u
from trainium_lab._validate import integer

__all__ = [
    "lnc_options", "resolve_lnc", "any_lnc", "logical_cores_per_chip", "CoreCounts", "core_counts",
    "core_count_table", "generations_table", "disagreements", "neuroncore_table",
]


# --------------------------------------------------------------------------- counting

def lnc_options(chip: str) -> tuple[int, ...]:
    """The LNC settings a chip accepts, from ``data/chips.csv``.

    An empty tuple means the chip has no LNC setting (Trainium1): one logical core per
    physical core.

    >>> lnc_options("trn2"), lnc_options("trn1")
    ((1, 2), ())
    """
    return specs.resolve_chip(chip).lnc_options


def resolve_lnc(chip: str, lnc: int | None = None) -> int:
    """The LNC setting that applies: ``lnc`` if valid for the chip, else its default.

    Parameters
    ----------
    chip : str
        ``"trn1"``, ``"trn2"`` or ``"trn3"``.
    lnc : int or None
        Physical NeuronCores per logical core. ``None`` means the chip's default.

    Raises
    ------
    ValueError
        Naming ``lnc``: a value the chip does not accept (any value but 1 on Trainium1,
        which has no setting), or ``None`` on a chip whose default no source states.

    Notes
    -----
    Trainium3's default (2) is inferred and labelled so in ``data/chips.csv``: the NxD
    Inference MoE deep dive says Trn2 and Trn3 provide two physical cores per logical core;
    no page calls it the default in so many words.

    Examples
    --------
    >>> resolve_lnc("trn2"), resolve_lnc("trn2", 1), resolve_lnc("trn1"), resolve_lnc("trn3")
    (2, 1, 1, 2)
    """
    c = specs.resolve_chip(chip)
    if not c.lnc_options:
        if lnc is None or (not isinstance(lnc, bool) and lnc == 1):
            return 1
        raise ValueError(f"lnc must be None or 1 for {c.name}: it has no logical-NeuronCore "
                         f"setting (LNC applies only to Trn2 and Trn3); got {lnc!r}")
    listed = ", ".join(str(o) for o in c.lnc_options)
    if lnc is None:
        if c.lnc_default is None:
            raise ValueError(f"lnc must be given for {c.name} (one of {listed}): "
                             "no AWS page states its default")
        return c.lnc_default
    if isinstance(lnc, bool) or not isinstance(lnc, numbers.Real) or lnc not in c.lnc_options:
        raise ValueError(f"lnc must be one of {listed} for {c.name} (or None for its default); "
                         f"got {lnc!r}")
    return int(lnc)


def any_lnc(chip: str) -> int | None:
    """A valid LNC for counting whole chips, where the setting does not matter: the chip's
    default (Trainium2; Trainium3's inferred 2), else its first option, else ``None``
    (Trainium1 has no setting).

    >>> any_lnc("trn2"), any_lnc("trn3"), any_lnc("trn1")
    (2, 2, None)
    """
    c = specs.resolve_chip(chip)
    if c.lnc_default is not None:
        return c.lnc_default
    return c.lnc_options[0] if c.lnc_options else None


def logical_cores_per_chip(chip: str, lnc: int | None = None) -> int:
    """Logical NeuronCores per chip: physical cores divided by LNC.

    >>> logical_cores_per_chip("trn2"), logical_cores_per_chip("trn2", 1)
    (4, 8)
    >>> logical_cores_per_chip("trn1")
    2
    """
    c = specs.resolve_chip(chip)
    return c.neuron_cores // resolve_lnc(c, lnc)


@dataclass(frozen=True)
class CoreCounts:
    """Chips, physical and logical NeuronCores in ``n_systems`` copies of one system.

    ``ranks`` is the number of worker processes the Neuron runtime starts: one per
    logical core.
    """

    system: str
    name: str
    chip: str
    lnc: int
    n_systems: int
    n_instances: int
    n_chips: int
    physical_cores: int
    logical_cores: int
    hbm_bytes_per_logical_core: float
    efa_bytes_per_s_per_logical_core: float | None

    @property
    def ranks(self) -> int:
        """Runtime ranks (one per logical NeuronCore)."""
        return self.logical_cores

    @property
    def logical_cores_per_chip(self) -> int:
        """Logical NeuronCores on each chip."""
        return self.logical_cores // self.n_chips

    @property
    def logical_cores_per_instance(self) -> int:
        """Logical NeuronCores in each instance (or server)."""
        return self.logical_cores // self.n_instances

    def __repr__(self) -> str:
        return (f"CoreCounts({self.n_systems} × {self.system}: {self.n_chips} chips, "
                f"{self.physical_cores} physical / {self.logical_cores} logical cores at LNC={self.lnc})")

    def _repr_markdown_(self) -> str:
        return (f"**{self.n_systems} × {self.name}**: {self.n_chips} chips, {self.physical_cores:,} "
                f"physical NeuronCores, **{self.logical_cores:,} logical cores (ranks) at LNC={self.lnc}**; "
                f"{u.format_bytes(self.hbm_bytes_per_logical_core)} of HBM per logical core")


def core_counts(system: str, lnc: int | None = None, n_systems: int = 1) -> CoreCounts:
    """Count chips, physical and logical NeuronCores in one or more systems.

    Parameters
    ----------
    system : str
        ``"trn1.32xlarge"``, ``"trn2.48xlarge"``, ``"trn2-ultraserver"``,
        ``"trn3-gen1-ultraserver"`` or ``"trn3-gen2-ultraserver"``.
    lnc : int or None
        Physical cores per logical core; ``None`` for the chip's default (required on
        Trainium3, see :func:`resolve_lnc`).
    n_systems : int
        How many such systems (1 to 100,000).

    Returns
    -------
    CoreCounts
        Also HBM per logical core (the chip's HBM shared equally) and, where recorded,
        EFA bandwidth per logical core.

    References
    ----------
    AWS Neuron docs, "Logical NeuronCore configuration": 64 logical cores per
    trn2.48xlarge at LNC=2, 128 at LNC=1.

    Examples
    --------
    >>> c = core_counts("trn2.48xlarge")
    >>> c.lnc, c.physical_cores, c.logical_cores
    (2, 128, 64)
    >>> core_counts("trn2-ultraserver").ranks
    256
    >>> core_counts("trn3-gen2-ultraserver", lnc=1).logical_cores
    1152
    """
    s = specs.system(system)
    n_systems = integer("n_systems", n_systems, minimum=1, maximum=100_000)
    c = s.chip
    lnc = resolve_lnc(c, lnc)
    per_chip = c.neuron_cores // lnc
    n_chips = s.n_chips * n_systems
    efa = None if c.efa_bytes_per_s is None else c.efa_bytes_per_s / per_chip
    return CoreCounts(s.key, s.name, c.key, lnc, n_systems, s.n_instances * n_systems, n_chips,
                      n_chips * c.neuron_cores, n_chips * per_chip, c.hbm_bytes / per_chip, efa)


def core_count_table(system: str, lnc: int | None = None, n_systems: int = 1) -> pd.DataFrame:
    """Chips, physical and logical cores at each level: chip, instance, system, all systems.

    Returns
    -------
    pandas.DataFrame
        One row per level, columns ``level``, ``chips``, ``physical_cores``,
        ``logical_cores``. The LNC is ``core_counts(...).lnc`` and the long form a chart
        draws is :func:`trainium_lab.views.core_counts_long`.

    Examples
    --------
    >>> core_count_table("trn2-ultraserver")[["level", "logical_cores"]].values.tolist()
    [['one chip', 4], ['one instance', 64], ['one Trn2 UltraServer', 256]]
    """
    cc = core_counts(system, lnc, n_systems)
    s = specs.system(system)
    per_chip_phys = cc.physical_cores // cc.n_chips
    per_chip_log = cc.logical_cores_per_chip
    levels = [("one chip", 1)]
    if s.n_instances > 1 or s.kind == "instance":
        word = "instance" if s.kind == "instance" or s.key.startswith("trn2") else "server"
        levels.append((f"one {word}", s.chips_per_instance))
    if s.kind != "instance":
        levels.append((f"one {s.name}", s.n_chips))
    if n_systems > 1:
        levels.append((f"{n_systems} × {s.name}", cc.n_chips))
    df = pd.DataFrame([{"level": name, "chips": chips, "physical_cores": chips * per_chip_phys,
                        "logical_cores": chips * per_chip_log} for name, chips in levels])
    return df


# --------------------------------------------------------------------------- re-exports
# Comparing generations lives in its own module (it imports only specs); chapter 01's notebook,
# charts and widgets reach it as cores.X. Checking claims is trainium_lab.claim_checks, its one home.
from trainium_lab.generations import (disagreements, generations_table,  # noqa: E402
                                      neuroncore_table)
