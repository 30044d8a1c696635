"""Chapter 03's views: the labels of a rank-to-chip map."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainium_lab import topology
from trainium_lab._validate import instance

__all__ = ["chip_map"]


def chip_map(placement, kind: str = "tp", highlight: int = 0) -> pd.DataFrame:
    """Every chip of a placement with the labels a rank-to-chip map shows.

    :meth:`trainium_lab.topology.Placement.chip_groups` plus ``label`` (``"US0·i1"``:
    UltraServer 0, instance 1; ``"inst0"`` for standalone instances) and ``colour``
    (``"group g"``, or ``"mixed"`` when several groups of ``kind`` share the chip: the
    category a chart colours by).

    Returns
    -------
    pandas.DataFrame
        ``global_chip, system, instance, chip, row, col, label, first_rank, last_rank,
        group, n_groups, colour, highlighted``.

    Examples
    --------
    >>> m = chip_map(topology.place(tp=64, pp=4, system="trn2-ultraserver", lnc=2))
    >>> m.label.iloc[16], m.colour.iloc[16]
    ('US0·i1', 'group 1')
    """
    placement = instance("placement", placement, topology.Placement, "a Placement from topology.place")
    g = placement.chip_groups(kind, highlight)
    if placement.cluster.instances_per_system > 1:
        label = [f"US{s}·i{i}" for s, i in zip(g.system.tolist(), g.instance.tolist())]
    else:
        label = [f"inst{s}" for s in g.system.tolist()]
    g.insert(6, "label", label)
    g.insert(len(g.columns) - 1, "colour",
             np.where(g.n_groups > 1, "mixed", np.char.add("group ", g.group.to_numpy().astype(str))))
    return g
