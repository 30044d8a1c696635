"""Chapter 00's small model: does a model fit in the HBM of one chip, or of n chips?

Pure: numbers in, a tidy DataFrame or a frozen dataclass out. The full memory model (gradients,
optimizer state, activations) is chapter 04's ``trainium_lab.sizing``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from trainium_lab import numerics, sizing, specs
from trainium_lab._validate import in_range, integer, positive
from trainium_lab.units import GB, GiB

__all__ = ["weights_bytes", "weights_vs_hbm", "gb_and_gib", "HbmFit", "hbm_fit", "max_params"]


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
        Rows "weights" and "HBM of one <chip>", columns ``item``, ``gib``, ``kind``.
        The chips the weights need is :func:`hbm_fit`'s ``min_chips`` (with
        ``reserve_share=0`` for the weights alone).

    Examples
    --------
    >>> df = weights_vs_hbm(70e9, 2, "trn2")
    >>> round(float(df.gib[0]), 1), round(float(df.gib[1]), 1)
    (130.4, 96.0)
    """
    size = weights_bytes(n_params, bytes_per_param)
    spec = specs.chip(chip)
    return pd.DataFrame({
        "item": ["weights", f"HBM of one {spec.name}"],
        "gib": [size / GiB, spec.hbm_bytes / GiB],
        "kind": ["needed", "available"],
    })


def gb_and_gib(n_bytes: float) -> pd.DataFrame:
    """One size expressed in GB (10^9 bytes) and GiB (2^30 bytes).

    >>> df = gb_and_gib(96 * GiB)
    >>> [round(float(v), 2) for v in df.value]
    [103.08, 96.0]
    """
    n_bytes = positive("n_bytes", n_bytes)
    return pd.DataFrame({"unit": ["GB (10^9 bytes)", "GiB (2^30 bytes)"],
                         "value": [n_bytes / GB, n_bytes / GiB]})


# --------------------------------------------------------------------------- what must fit in HBM
# Appended for chapter 00's explorer (issue 15): the model's bytes, by what is stored, spread
# over n chips, against the part of each chip's HBM that is left for them.

#: largest chip count accepted (far beyond any cluster; keeps products finite)
_MAX_CHIPS = 10**7


def _components(stored: str) -> dict[str, float]:
    """Bytes per parameter by component: weights only for a number format, the full
    training state for one of ``sizing.RECIPES``."""
    if isinstance(stored, str) and stored in sizing.RECIPES:
        return {c: float(b) for c, b in sizing.recipe(stored).components().items() if b > 0}
    try:
        return {"weights": numerics.format_info(stored).bits / 8}
    except ValueError:
        listed = ", ".join(repr(s) for s in (*numerics.FORMATS, *sizing.RECIPES))
        raise ValueError(f"stored must be a number format for the weights alone or a training "
                         f"recipe: one of {listed}; got {stored!r}") from None


@dataclass(frozen=True)
class HbmFit:
    """A model's bytes spread evenly over ``n_chips`` chips, against each chip's HBM.

    Fields are in base units (bytes). ``components`` holds bytes per parameter by component
    (``weights``; for training also ``gradients``, ``master``, ``adam_m``, ``adam_v``).
    ``reserve_share`` of every chip's HBM is kept free for what grows with the batch
    (activations, KV cache) and for the runtime: an assumption, not a published figure.
    """

    n_params: float
    stored: str
    chip: str
    n_chips: int
    components: tuple[tuple[str, float], ...]
    hbm_bytes: float
    reserve_share: float

    @property
    def bytes_per_param(self) -> float:
        """All components added up."""
        return sum(b for _, b in self.components)

    @property
    def total_bytes(self) -> float:
        """The whole model's bytes: ``n_params × bytes_per_param``."""
        return self.n_params * self.bytes_per_param

    @property
    def bytes_per_chip(self) -> float:
        """Each chip's share when the bytes are split evenly (sharded) over the chips."""
        return self.total_bytes / self.n_chips

    @property
    def room_bytes(self) -> float:
        """HBM per chip left for the model: ``hbm × (1 − reserve_share)``."""
        return self.hbm_bytes * (1.0 - self.reserve_share)

    @property
    def fits(self) -> bool:
        """Whether each chip's share fits in its room."""
        return self.bytes_per_chip <= self.room_bytes

    @property
    def min_chips(self) -> int:
        """Fewest chips whose rooms hold the model: ``ceil(total / room)``."""
        return max(1, math.ceil(self.total_bytes / self.room_bytes - 1e-9))

    def parts(self) -> pd.DataFrame:
        """Tidy rows for a stacked bar: what each chip holds, and one chip's HBM.

        Columns ``bar`` ("per chip" or "HBM"), ``part`` (a component, or ``room`` and
        ``reserve``), ``bytes``, ``gib``.
        """
        rows = [("per chip", c, self.n_params * b / self.n_chips) for c, b in self.components]
        rows += [("HBM", "room", self.room_bytes), ("HBM", "reserve", self.hbm_bytes - self.room_bytes)]
        df = pd.DataFrame(rows, columns=["bar", "part", "bytes"])
        return df.assign(gib=df["bytes"] / GiB)

    def _repr_markdown_(self) -> str:
        verdict = "fits" if self.fits else f"does not fit (needs at least {self.min_chips} chips)"
        return (f"{self.n_params / 1e9:,.3g} B parameters × {self.bytes_per_param:g} bytes "
                f"= {self.total_bytes / GiB:,.1f} GiB; on {self.n_chips} × {self.chip} that is "
                f"{self.bytes_per_chip / GiB:,.1f} GiB per chip against {self.room_bytes / GiB:,.1f} GiB "
                f"of room ({self.reserve_share:.0%} of {self.hbm_bytes / GiB:,.0f} GiB kept free): "
                f"**{verdict}**")


def hbm_fit(n_params: float, stored: str = "bfloat16", chip: str = "trn2", n_chips: int = 1,
            reserve_share: float = sizing.DEFAULT_ACTIVATION_SHARE) -> HbmFit:
    """Does a model fit in the HBM of ``n_chips`` chips, with room kept for the rest?

    ``bytes = n_params × bytes per parameter``, split evenly over the chips (as tensor
    parallelism or fully sharded data parallelism split it), against
    ``hbm × (1 − reserve_share)`` per chip.

    Parameters
    ----------
    n_params : float
        Number of parameters (> 0).
    stored : str
        What every parameter costs: a number format for the weights alone (serving:
        ``"float32"``, ``"bfloat16"``, ``"float8_e4m3fn"``, or an alias such as ``"bf16"``), or
        a training recipe of :data:`trainium_lab.sizing.RECIPES` (``"bf16-adam"``: 2 + 2 + 12
        bytes for weights, gradients, FP32 master copy and Adam's two moments).
    chip : str
        A Trainium chip (``"trn1"``, ``"trn2"``, ``"trn3"``); its HBM comes from ``data/``.
    n_chips : int
        Chips the bytes are split over (>= 1).
    reserve_share : float
        Share of each chip's HBM kept for activations, KV cache and the runtime, in [0, 1);
        default ``sizing.DEFAULT_ACTIVATION_SHARE`` (a rule of thumb, chapter 04 tests it).

    Returns
    -------
    HbmFit

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, section 3.1 (16 bytes per parameter
    for mixed-precision Adam); HBM per chip from the AWS Neuron architecture pages.

    Examples
    --------
    >>> f = hbm_fit(70e9, "bfloat16", "trn2", n_chips=2, reserve_share=0.0)
    >>> round(f.total_bytes / GiB, 1), f.fits, f.min_chips
    (130.4, True, 2)
    >>> hbm_fit(70e9, "bf16-adam", "trn2").min_chips     # 1,043 GiB over 62.4 GiB per chip
    17
    """
    n_params = in_range("n_params", n_params, 0.0, 1e18, low_open=True)
    parts = _components(stored)
    spec = specs.chip(chip)
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=_MAX_CHIPS)
    share = in_range("reserve_share", reserve_share, 0.0, 1.0, high_open=True)
    return HbmFit(n_params, stored, spec.name, n_chips, tuple(parts.items()), spec.hbm_bytes, share)


def max_params(stored: str = "bfloat16", chip: str = "trn2", n_chips: int = 1,
               reserve_share: float = sizing.DEFAULT_ACTIVATION_SHARE) -> float:
    """The most parameters ``n_chips`` chips hold: ``n_chips × hbm × (1 − reserve) / bytes``.

    The rule of thumb behind :func:`hbm_fit`, solved for the parameter count. Parameters as
    for :func:`hbm_fit`.

    Returns
    -------
    float
        Parameters (a count).

    References
    ----------
    As for :func:`hbm_fit`.

    Examples
    --------
    >>> round(max_params("bfloat16", "trn2", reserve_share=0.0) / 1e9, 1)   # 96 GiB / 2 bytes
    51.5
    >>> round(max_params("bf16-adam", "trn2") / 1e9, 2)                     # 62.4 GiB / 16 bytes
    4.19
    """
    fit = hbm_fit(1.0, stored, chip, n_chips, reserve_share)
    return fit.n_chips * fit.room_bytes / fit.bytes_per_param
