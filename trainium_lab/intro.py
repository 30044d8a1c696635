"""Chapter 00's small model: do a model's weights fit in one chip's HBM?

Pure: numbers in, a tidy DataFrame out. The full memory model (gradients,
optimizer state, activations) is chapter 04's ``trainium_lab.sizing``.
"""

from __future__ import annotations

import math

import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import positive
from trainium_lab.units import GB, GiB

__all__ = ["weights_bytes", "weights_vs_hbm", "gb_and_gib"]


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


def weights_vs_hbm(n_params: float, bytes_per_param: float = 2.0, chip: str = "trn2") -> pd.DataFrame:
    """The weights' size next to one chip's HBM, in GiB, and the chips they need.

    Returns
    -------
    pandas.DataFrame
        Rows "weights" and "HBM of one <chip>", columns ``item``, ``gib``, ``kind``;
        ``df.attrs["chips_needed"]`` is ceil(weights / HBM), weights only.

    Examples
    --------
    >>> df = weights_vs_hbm(70e9, 2, "trn2")
    >>> round(float(df.gib[0]), 1), df.attrs["chips_needed"]
    (130.4, 2)
    """
    size = weights_bytes(n_params, bytes_per_param)
    spec = specs.chip(chip)
    df = pd.DataFrame({
        "item": ["weights", f"HBM of one {spec.name}"],
        "gib": [size / GiB, spec.hbm_bytes / GiB],
        "kind": ["needed", "available"],
    })
    df.attrs["chips_needed"] = math.ceil(size / spec.hbm_bytes)
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
