"""Chapter 00's small model: do a model's weights fit in one chip's HBM?

Pure: numbers in, numbers and small typed results out. The full memory model (gradients,
optimizer state, activations) is chapter 04's ``trainium_lab.sizing``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import positive
from trainium_lab.units import GB, GiB, format_bytes

__all__ = ["weights_bytes", "WeightsFit", "weights_fit", "weights_vs_hbm", "gb_and_gib"]


def weights_bytes(n_params: float, bytes_per_param: float = 2.0) -> float:
    """Bytes taken by the weights alone.

    Parameters
    ----------
    n_params : float
        Number of parameters (> 0).
    bytes_per_param : float
        Bytes per weight: 2 for BF16, 1 for FP8, 4 for FP32 (> 0).

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> weights_bytes(8e9) / 1e9
    16.0
    """
    n_params = positive("n_params", n_params)
    bytes_per_param = positive("bytes_per_param", bytes_per_param)
    return n_params * bytes_per_param


@dataclass(frozen=True)
class WeightsFit:
    """A model's weights against one chip's HBM (bytes), from :func:`weights_fit`."""

    n_params: float
    bytes_per_param: float
    chip: str
    chip_name: str
    weights_bytes: float
    hbm_bytes: float

    @property
    def chips_needed(self) -> int:
        """Fewest chips whose HBM holds the weights alone: ``ceil(weights / HBM)``."""
        return math.ceil(self.weights_bytes / self.hbm_bytes)

    def table(self) -> pd.DataFrame:
        """Rows "weights" and "HBM of one <chip>": ``item``, ``gib``, ``kind`` (for a bar chart)."""
        return pd.DataFrame({
            "item": ["weights", f"HBM of one {self.chip_name}"],
            "gib": [self.weights_bytes / GiB, self.hbm_bytes / GiB],
            "kind": ["needed", "available"],
        })

    def _repr_markdown_(self) -> str:
        return (f"**{self.n_params:.3g} parameters × {self.bytes_per_param:g} bytes** = "
                f"{format_bytes(self.weights_bytes)} of weights; one {self.chip_name} has "
                f"{format_bytes(self.hbm_bytes)} of HBM: at least **{self.chips_needed}** "
                f"chip{'s' if self.chips_needed != 1 else ''} for the weights alone")


def weights_fit(n_params: float, bytes_per_param: float = 2.0, chip: str = "trn2") -> WeightsFit:
    """The weights' size next to one chip's HBM, and the chips they need.

    Examples
    --------
    >>> f = weights_fit(70e9, 2, "trn2")
    >>> round(f.weights_bytes / GiB, 1), f.chips_needed
    (130.4, 2)
    """
    size = weights_bytes(n_params, bytes_per_param)
    spec = specs.chip(chip)
    return WeightsFit(float(n_params), float(bytes_per_param), spec.key, spec.name, size,
                      spec.hbm_bytes)


def weights_vs_hbm(n_params: float, bytes_per_param: float = 2.0, chip: str = "trn2") -> pd.DataFrame:
    """:func:`weights_fit`'s bar-chart rows (``item``, ``gib``, ``kind``).

    For callers written before issue 13 the table still carries
    ``df.attrs["chips_needed"]``; new code reads ``weights_fit(...).chips_needed``
    (pandas documents ``attrs`` as experimental, and it does not survive every operation).

    Examples
    --------
    >>> df = weights_vs_hbm(70e9, 2, "trn2")
    >>> round(float(df.gib[0]), 1)
    130.4
    """
    fit = weights_fit(n_params, bytes_per_param, chip)
    df = fit.table()
    df.attrs["chips_needed"] = fit.chips_needed  # legacy, see the docstring
    return df


def gb_and_gib(n_bytes: float) -> pd.DataFrame:
    """One size expressed in GB (10^9 bytes) and GiB (2^30 bytes).

    >>> df = gb_and_gib(96 * GiB)
    >>> [round(float(v), 2) for v in df.value]
    [103.08, 96.0]
    """
    n_bytes = positive("n_bytes", n_bytes)
    return pd.DataFrame({"unit": ["GB (10^9 bytes)", "GiB (2^30 bytes)"],
                         "value": [n_bytes / GB, n_bytes / GiB]})
