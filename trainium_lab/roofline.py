"""What bounds a matrix multiply: the roofline model and the 128 x 128 tensor engine.

A matmul ``C[m, n] = A[m, k] @ B[k, n]`` does ``2·m·n·k`` FLOPs and, at the very least,
reads A and B from HBM once and writes C once. Its time on a chip is at least the larger
of the two times those take at the chip's peak rates; which one is larger names the
binding resource (Williams, Waterman and Patterson 2009). Whether the tensor engine can
run at its peak at all depends on how the shape fills its 128 x 128 array of processing
elements (the tiling rules of the AWS NKI architecture guides).

Every hardware figure comes from :mod:`trainium_lab.specs`; the chips are ``"trn1"``,
``"trn2"``, ``"trn3"`` and the comparison accelerators (``"h100"``, ``"tpu-v6e"``...).

References
----------
S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model
for multicore architectures", Communications of the ACM 52(4), 2009.
AWS Neuron docs, "Trainium/Inferentia2 Architecture Guide for NKI" (tensor engine tile
sizes: contraction dimension on at most 128 partitions, stationary free size at most 128,
output accumulated in FP32 in PSUM).
OCP Microscaling Formats (MX) Specification v1.0, 2023 (one 8-bit shared scale per block
of 32 elements).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab.dtypes import bytes_per_element  # re-exported: the one table of element sizes
from trainium_lab._validate import UnknownNameError, choice, integer, positive, sequence
from trainium_lab.units import TB, TFLOPS

__all__ = [
    "Device", "device", "device_names", "bytes_per_element", "matmul_flops", "matmul_bytes",
    "arithmetic_intensity", "ridge_point", "square_size_at_ridge", "MatmulBound",
    "matmul_bound", "ArrayUtilisation", "contraction_rows", "array_utilisation", "roofline_curve",
    "utilisation_curve", "ridge_table",
]

@dataclass(frozen=True)
class Device:
    """The two roofs of one processor: peak dense FLOP/s per dtype and HBM bytes/s.

    ``kind`` is ``"trainium"`` for the three Trainium chips and ``"comparison"`` for the
    GPUs and TPUs, whose figures come from vendor pages or secondary compilations
    (``tier``).
    """

    key: str
    name: str
    kind: str
    dense_flops_per_s: specs.DtypeTable
    hbm_bytes_per_s: float
    tier: str


def device_names() -> tuple[str, ...]:
    """Keys accepted as ``chip``: the Trainium chips, then the comparison accelerators.

    >>> device_names()[:3]
    ('trn1', 'trn2', 'trn3')
    """
    return tuple(c.key for c in specs.chips()) + tuple(a.key for a in specs.accelerators())


def device(chip: str) -> Device:
    """Look up a Trainium chip or a comparison accelerator by name.

    Parameters
    ----------
    chip : str
        ``"trn1"``, ``"trn2"``, ``"trn3"`` (or ``"Trainium2"``...), or an accelerator key
        such as ``"h100"`` or ``"tpu-v6e"``.

    Raises
    ------
    ValueError
        For an unknown name; the message names ``chip`` and lists the known names.

    Examples
    --------
    >>> device("Trainium2").hbm_bytes_per_s / 1e12
    2.9
    >>> device("h100").kind
    'comparison'
    """
    if not isinstance(chip, str):
        listed = ", ".join(repr(k) for k in device_names())
        raise UnknownNameError(f"chip must be one of {listed}; got {chip!r}")
    return _device(chip)


@functools.lru_cache(maxsize=64)
def _device(chip: str) -> Device:
    try:
        c = specs.chip(chip)
    except ValueError:
        pass
    else:
        return Device(c.key, c.name, "trainium", c.dense_flops_per_s, c.hbm_bytes_per_s,
                      specs.fact(c.key, "hbm_bytes_per_s").source_tier)
    try:
        a = specs.accelerator(chip)
    except ValueError:
        listed = ", ".join(repr(k) for k in device_names())
        raise UnknownNameError(f"chip must be one of {listed}; got {chip!r}") from None
    return Device(a.key, a.name, "comparison", a.dense_flops_per_s, a.hbm_bytes_per_s,
                  specs.fact(a.key, "hbm_bytes_per_s").source_tier)


def _dims(m, n, k) -> tuple[int, int, int]:
    return integer("m", m), integer("n", n), integer("k", k)


def matmul_flops(m: int, n: int, k: int) -> float:
    """FLOPs of ``C[m, n] = A[m, k] @ B[k, n]``: one multiply and one add per term, ``2·m·n·k``.

    >>> matmul_flops(128, 512, 128)
    16777216.0
    """
    m, n, k = _dims(m, n, k)
    return 2.0 * m * n * k


def matmul_bytes(m: int, n: int, k: int, dtype: str) -> float:
    """Bytes a matmul must move at least: read A (m×k) and B (k×n), write C (m×n) once.

    All three at ``dtype``'s size. This is the lower bound of the roofline model: a real
    kernel that cannot keep its tiles on chip re-reads some of them.

    >>> matmul_bytes(4096, 4096, 4096, "bf16") / 2**20
    96.0
    """
    m, n, k = _dims(m, n, k)
    return float(m * k + k * n + m * n) * bytes_per_element(dtype)


def arithmetic_intensity(m: int, n: int, k: int, dtype: str) -> float:
    """FLOPs per byte of HBM traffic, ``2mnk / ((mk + kn + mn)·bytes)``.

    For a square matmul of size s this is ``s / (3·bytes/2)``: s/3 in BF16.

    >>> round(arithmetic_intensity(4096, 4096, 4096, "bf16"), 1)
    1365.3
    >>> round(arithmetic_intensity(1, 8192, 8192, "bf16"), 2)
    1.0
    """
    return matmul_flops(m, n, k) / matmul_bytes(m, n, k, dtype)


def ridge_point(chip: str, dtype: str = "bfloat16") -> float:
    """The chip's ridge point: peak dense FLOP/s for ``dtype`` over HBM bytes/s (FLOP/byte).

    A kernel whose arithmetic intensity is below the ridge point cannot reach peak
    compute: HBM binds first.

    Parameters
    ----------
    chip : str
        A Trainium chip or comparison accelerator (see :func:`device_names`).
    dtype : str
        A dtype the chip has a dense rate for in ``data/`` (on Trainium3 ``fp8`` runs at the
        BF16 rate and ``mxfp8`` at four times it).

    Returns
    -------
    float
        FLOP per byte.

    References
    ----------
    Williams, Waterman and Patterson (2009); rates from ``data/chips.csv``.

    Examples
    --------
    >>> round(ridge_point("trn2", "bf16"))
    230
    >>> round(ridge_point("trn1", "fp32"))
    54
    """
    d = device(chip)
    return d.dense_flops_per_s[dtype] / d.hbm_bytes_per_s


def square_size_at_ridge(chip: str, dtype: str = "bfloat16") -> float:
    """The size s at which a square s×s×s matmul's intensity equals the ridge point.

    From ``2s³ / (3s²·bytes) = ridge``: ``s = 1.5·bytes·ridge``. Smaller squares are
    HBM-bound, larger ones compute-bound.

    >>> round(square_size_at_ridge("trn2", "bf16"))
    690
    """
    return 1.5 * bytes_per_element(dtype) * ridge_point(chip, dtype)


@dataclass(frozen=True)
class ArrayUtilisation:
    """How a matmul shape fills a ``rows × cols`` tensor-engine array.

    The contraction dimension k runs down the array's rows (the SBUF partitions) and
    m (the stationary operand's free size) across its columns; n streams through.
    Each dimension is cut into ``ceil(dim / size)`` tiles and the last tile is padded.
    """

    m: int
    n: int
    k: int
    rows: int
    cols: int
    k_tiles: int
    m_tiles: int
    k_fill: float
    m_fill: float

    @property
    def utilisation(self) -> float:
        """Fraction of processing elements doing useful work, ``k_fill · m_fill``."""
        return self.k_fill * self.m_fill

    @property
    def tiles(self) -> int:
        """Stationary tiles loaded: ``k_tiles · m_tiles``."""
        return self.k_tiles * self.m_tiles


def contraction_rows(chip: str = "trn2", dtype: str = "bfloat16") -> int:
    """Rows of the tensor engine's array one instruction contracts over, for ``dtype``.

    128 (the SBUF partitions) in general; the NKI guides give more for the fast 8-bit
    modes: Trainium2's double-FP8 mode contracts over 256 (a 256 × 128 array to the
    programmer), Trainium3's MX matmul over 512 (512 × 128). Read from ``data/cores.csv``
    (``tensor_contraction_max.<dtype>``, the rows chapter 08's emulator reads too, else
    ``tensor_rows``).

    References
    ----------
    AWS Neuron docs, "Trainium2 Architecture Guide for NKI" (Double FP8 Matmul
    Performance) and "Trainium3 Architecture Guide for NKI" (Quad-MXFP8/MXFP4 Matmul).

    Examples
    --------
    >>> contraction_rows("trn2", "bf16"), contraction_rows("trn2", "fp8"), contraction_rows("trn3", "mxfp8")
    (128, 256, 512)
    >>> contraction_rows("trn3", "fp8")   # plain FP8 on Trainium3: the BF16 data path
    128
    """
    c = specs.chip(chip)
    key = c.dense_flops_per_s.key(dtype)  # validates dtype for this chip (aliases accepted)
    try:
        return int(specs.fact(c.core.name, f"tensor_contraction_max.{key}").base_value)
    except ValueError:
        return int(c.core.tensor_rows)


def array_utilisation(m: int, n: int, k: int, chip: str = "trn2", dtype: str = "bfloat16") -> ArrayUtilisation:
    """The fraction of the tensor engine's array a matmul shape keeps busy.

    The NKI guides map the contraction dimension k onto the array's rows (128 SBUF
    partitions per instruction, or more in the fast 8-bit modes: :func:`contraction_rows`)
    and the stationary operand's free dimension m onto its columns (at most
    ``tensor_cols`` = 128); n streams through. A dimension that is not a multiple of the
    array size leaves the last tile part-empty: ``fill = dim / (ceil(dim / size) · size)``.

    Parameters
    ----------
    m, n, k : int
        Matmul dimensions (>= 1): ``C[m, n] = A[m, k] @ B[k, n]``.
    chip : str
        A Trainium chip; its NeuronCore's array size comes from ``data/cores.csv``.
    dtype : str
        Operand dtype: sets how many rows one instruction contracts over.

    Returns
    -------
    ArrayUtilisation

    References
    ----------
    AWS Neuron docs, "Trainium/Inferentia2 Architecture Guide for NKI", Tensor Engine:
    Tile Size (``stationary`` free size <= 128, partition size <= 128); the Trainium2 and
    Trainium3 NKI guides for the 256- and 512-row modes.

    Examples
    --------
    >>> array_utilisation(4096, 4096, 4096).utilisation
    1.0
    >>> u = array_utilisation(100, 512, 100)
    >>> round(u.utilisation, 3), u.tiles
    (0.61, 1)
    >>> round(array_utilisation(1, 8192, 8192).utilisation, 4)
    0.0078
    >>> round(array_utilisation(128, 128, 129).k_fill, 3)
    0.504
    >>> array_utilisation(128, 512, 128, "trn2", "fp8").k_fill   # double-FP8 mode: 256 rows
    0.5
    """
    m, n, k = _dims(m, n, k)
    core = specs.chip(chip).core
    rows, cols = contraction_rows(chip, dtype), core.tensor_cols
    k_tiles, m_tiles = math.ceil(k / rows), math.ceil(m / cols)
    return ArrayUtilisation(m, n, k, rows, cols, k_tiles, m_tiles,
                            k / (k_tiles * rows), m / (m_tiles * cols))


@dataclass(frozen=True)
class MatmulBound:
    """A matmul's time lower bound on one chip, and which resource sets it."""

    m: int
    n: int
    k: int
    dtype: str
    chip: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    utilisation: float
    compute_s: float
    memory_s: float

    @property
    def time_s(self) -> float:
        """The lower bound: ``max(compute_s, memory_s)`` (compute and data movement overlap)."""
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        """``"tensor engine"`` if compute takes at least as long as HBM traffic, else ``"HBM"``."""
        return "tensor engine" if self.compute_s >= self.memory_s else "HBM"

    @property
    def achieved_flops_per_s(self) -> float:
        """FLOPs over the time bound: the best rate this matmul can reach."""
        return self.flops / self.time_s

    @property
    def fraction_of_peak(self) -> float:
        """``achieved_flops_per_s / peak_flops_per_s``."""
        return self.achieved_flops_per_s / self.peak_flops_per_s


def matmul_bound(m: int, n: int, k: int, dtype: str = "bfloat16", chip: str = "trn2", *,
                 tiled: bool = False) -> MatmulBound:
    """Lower bound on a matmul's time on one chip and the binding resource.

    ``compute_s = 2mnk / peak`` and ``memory_s = (mk + kn + mn)·bytes / HBM bytes/s``;
    the bound is their maximum and the binding resource the larger of the two. With
    ``tiled=True`` the tensor-engine time also pays for the padded part of the array
    (``peak · utilisation``, :func:`array_utilisation` for ``dtype``; Trainium chips only).

    Parameters
    ----------
    m, n, k : int
        Matmul dimensions (>= 1): ``C[m, n] = A[m, k] @ B[k, n]``.
    dtype : str
        Operand dtype; sets both the peak rate and the bytes per element.
    chip : str
        A Trainium chip or a comparison accelerator.
    tiled : bool
        Charge the tensor engine for part-empty tiles (see :func:`array_utilisation`).

    Returns
    -------
    MatmulBound
        ``time_s``, ``bound`` ("tensor engine" or "HBM") and the terms behind them.

    References
    ----------
    Williams, Waterman and Patterson (2009), the roofline model.

    Examples
    --------
    >>> b = matmul_bound(4096, 4096, 4096, "bf16", "trn2")
    >>> b.bound, round(b.time_s * 1e6)
    ('tensor engine', 206)
    >>> b = matmul_bound(8, 8192, 8192, "bf16", "trn2")
    >>> b.bound, round(b.time_s * 1e6, 1)
    ('HBM', 46.4)
    """
    m, n, k = _dims(m, n, k)
    d = device(chip)
    peak = d.dense_flops_per_s[dtype]
    flops = matmul_flops(m, n, k)
    moved = matmul_bytes(m, n, k, dtype)
    if tiled:
        if d.kind != "trainium":
            raise ValueError(f"tiled=True needs a Trainium chip (trn1, trn2, trn3); got chip={chip!r}")
        util = array_utilisation(m, n, k, d.key, dtype).utilisation
    else:
        util = 1.0
    return MatmulBound(m, n, k, d.dense_flops_per_s.key(dtype), d.key, flops, moved,
                       flops / moved, peak / d.hbm_bytes_per_s, peak, d.hbm_bytes_per_s,
                       util, flops / (peak * util), moved / d.hbm_bytes_per_s)


def roofline_curve(chip: str, dtype: str = "bfloat16", *, low: float = 0.1,
                   high: float = 1e5, n_points: int = 2) -> pd.DataFrame:
    """Points on a chip's roofline: attainable FLOP/s against arithmetic intensity.

    ``attainable = min(peak, intensity · HBM bytes/s)``. The ridge point is always
    included, so two end points and the ridge draw the roof exactly on log-log axes.

    Parameters
    ----------
    chip, dtype : str
        As for :func:`ridge_point`.
    low, high : float
        Intensity range in FLOP/byte (0 < low < high).
    n_points : int
        Log-spaced points between ``low`` and ``high`` (>= 2), plus the ridge.

    Returns
    -------
    pandas.DataFrame
        Columns ``device``, ``dtype``, ``intensity`` (FLOP/byte), ``flops_per_s``,
        ``tflop_per_s`` (TFLOP/s), ``region`` ("HBM" or "tensor engine"), ``tier``.

    Examples
    --------
    >>> df = roofline_curve("trn2", "bf16")
    >>> len(df), round(df.tflop_per_s.max())
    (3, 667)
    """
    low = positive("low", low)
    high = positive("high", high)
    if high <= low:
        raise ValueError(f"high must be > low ({low:g}), got {high!r}")
    n_points = integer("n_points", n_points, minimum=2)
    d = device(chip)
    peak = d.dense_flops_per_s[dtype]
    ridge = peak / d.hbm_bytes_per_s
    x = np.unique(np.concatenate([np.geomspace(low, high, n_points),
                                  [ridge] if low < ridge < high else []]))
    y = np.minimum(peak, x * d.hbm_bytes_per_s)
    return pd.DataFrame({
        "device": d.name, "dtype": d.dense_flops_per_s.key(dtype), "intensity": x,
        "flops_per_s": y, "tflop_per_s": y / TFLOPS,
        "region": np.where(x < ridge, "HBM", "tensor engine"), "tier": d.tier,
    })


def utilisation_curve(dims: Iterable[int], *, chip: str = "trn2", other: int | None = None,
                      dtype: str = "bfloat16") -> pd.DataFrame:
    """Array utilisation as one dimension (k, and m with it) sweeps ``dims``.

    Parameters
    ----------
    dims : iterable of int
        Values of k to try (each >= 1).
    chip : str
        A Trainium chip.
    dtype : str
        Operand dtype (sets the contraction rows, :func:`contraction_rows`).
    other : int, optional
        Fix m at this value; by default m = k (a square tile problem).

    Returns
    -------
    pandas.DataFrame
        Columns ``dim``, ``m``, ``k``, ``utilisation``, ``tiles``.

    Examples
    --------
    >>> utilisation_curve([128, 129, 256], other=128).utilisation.round(3).tolist()
    [1.0, 0.504, 1.0]
    """
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise ValueError(f"dims must be a list of integers, got {dims!r}")
    rows = []
    for dim in sequence("dims", dims, integer, min_length=0):
        m = dim if other is None else other
        u = array_utilisation(m, 512, dim, chip, dtype)
        rows.append({"dim": u.k, "m": u.m, "k": u.k, "utilisation": u.utilisation,
                     "tiles": u.tiles})
    if not rows:
        raise ValueError("dims must hold at least one dimension")
    return pd.DataFrame(rows)


def ridge_table(chips: Iterable[str] | None = None) -> pd.DataFrame:
    """Ridge points of every chip for every dtype it has a dense rate for.

    Returns
    -------
    pandas.DataFrame
        Columns ``chip``, ``name``, ``kind``, ``dtype``, ``tflop_per_s``, ``hbm_tb_per_s``,
        ``ridge`` (FLOP/byte), ``tier``.

    Examples
    --------
    >>> t = ridge_table(["trn2"])
    >>> t.set_index("dtype").loc["bf16", "ridge"].round()
    np.float64(230.0)
    """
    rows = []
    for name in (device_names() if chips is None else sequence("chips", chips, lambda _n, c: c)):
        d = device(name)
        for dtype, rate in d.dense_flops_per_s.items():
            rows.append({"chip": d.key, "name": d.name, "kind": d.kind, "dtype": dtype,
                         "tflop_per_s": rate / TFLOPS, "hbm_tb_per_s": d.hbm_bytes_per_s / TB,
                         "ridge": rate / d.hbm_bytes_per_s, "tier": d.tier})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- compute-bound batch
# Appended for chapter 01's rules of thumb (issue 15): the batch at which a matmul turns
# compute-bound, in closed form.

__all__ += ["intensity_limit", "compute_bound_batch", "compute_bound_batch_table", "batch_curve"]


def _reciprocal(name: str, dim: int | None) -> float:
    """``1 / dim`` for a dimension, 0 for ``None`` (a dimension too large to matter)."""
    return 0.0 if dim is None else 1.0 / integer(name, dim)


def intensity_limit(n: int | None, k: int | None, dtype: str = "bfloat16") -> float:
    """The arithmetic intensity a matmul approaches as m grows, with n and k fixed.

    Dividing FLOPs and bytes by ``mnk`` gives ``I = 2 / (b·(1/m + 1/n + 1/k))``; as
    ``m → ∞`` it tends to ``2 / (b·(1/n + 1/k)) = 2nk / ((n + k)·b)``. No batch pushes a
    matmul past it: if it is below the chip's ridge point the matmul stays HBM-bound.

    Parameters
    ----------
    n, k : int or None
        The fixed dimensions (>= 1); ``None`` for one too large to matter (its 1/dim is 0).
        At least one must be given: with neither the intensity grows without bound.
    dtype : str
        Operand dtype (sets ``b``, :func:`bytes_per_element`).

    Returns
    -------
    float
        FLOP per byte.

    References
    ----------
    Williams, Waterman and Patterson (2009); intensity as in :func:`arithmetic_intensity`.

    Examples
    --------
    >>> intensity_limit(256, 256, "bf16")     # below Trainium2's BF16 ridge point (230)
    128.0
    >>> intensity_limit(8192, None, "fp8")
    16384.0
    """
    inv = _reciprocal("n", n) + _reciprocal("k", k)
    if inv == 0.0:
        raise ValueError("n and k: give at least one of them (with neither the limit is infinite)")
    return 2.0 / (bytes_per_element(dtype) * inv)


def compute_bound_batch(n: int | None = None, k: int | None = None, dtype: str = "bfloat16",
                        chip: str = "trn2") -> float:
    """The batch m at which ``A[m, k] @ B[k, n]`` turns compute-bound on a chip.

    Dividing ``2mnk = R·b·(mk + kn + mn)`` (intensity equal to the ridge point R, b bytes
    per element) by ``mnk`` gives a closed form, symmetric in the three dimensions::

        1/m + 1/n + 1/k = 2 / (R·b)   →   m* = 1 / (2/(R·b) − 1/n − 1/k)

    The matmul is compute-bound for every ``m >= m*``. For weights much wider than the
    batch (``n, k → ∞``, pass ``None``) ``m* → R·b/2``: in BF16 (b = 2) the compute-bound
    batch in tokens equals the ridge point in FLOP per byte. For a square matmul it gives
    :func:`square_size_at_ridge` (``3/s = 2/(R·b)``).

    Parameters
    ----------
    n, k : int or None
        The weight matrix's dimensions (>= 1); ``None`` for a dimension too large to matter.
    dtype : str
        Operand dtype: sets the peak rate and the bytes per element.
    chip : str
        A Trainium chip or comparison accelerator (see :func:`device_names`).

    Returns
    -------
    float
        Tokens (rows of A), not rounded; ``math.inf`` when no batch makes the matmul
        compute-bound (:func:`intensity_limit` below the ridge point).

    References
    ----------
    Williams, Waterman and Patterson (2009), the roofline model; the intensity of
    :func:`arithmetic_intensity` set equal to :func:`ridge_point` and solved for m.

    Examples
    --------
    >>> round(compute_bound_batch(None, None, "bf16", "trn2"), 1)   # = the ridge point
    230.0
    >>> round(compute_bound_batch(28672, 8192, "bf16", "trn2"), 1)
    238.6
    >>> compute_bound_batch(256, 256, "bf16", "trn2")
    inf
    """
    inv = 2.0 / (ridge_point(chip, dtype) * bytes_per_element(dtype))
    room = inv - _reciprocal("n", n) - _reciprocal("k", k)
    return 1.0 / room if room > 0 else math.inf


def compute_bound_batch_table(chips: Iterable[str] = ("trn2", "trn3"), n: int | None = None,
                              k: int | None = None) -> pd.DataFrame:
    """:func:`compute_bound_batch` for every dtype each chip has a dense rate for.

    Parameters
    ----------
    chips : iterable of str
        Chips or comparison accelerators (default Trainium2 and Trainium3).
    n, k : int or None
        Weight dimensions; ``None`` (default) for the wide-matrix limit ``R·b/2``.

    Returns
    -------
    pandas.DataFrame
        Columns ``chip``, ``name``, ``dtype``, ``tflop_per_s`` (peak, TFLOP/s), ``ridge``
        (FLOP/byte), ``bytes_per_element``, ``batch`` (tokens, :func:`compute_bound_batch`).

    Examples
    --------
    >>> t = compute_bound_batch_table(["trn2"])
    >>> t.set_index("dtype").loc[["bf16", "fp8"], "batch"].round().tolist()
    [230.0, 224.0]
    """
    rows = []
    for name in sequence("chips", chips, lambda _n, c: c):
        d = device(name)
        for dtype, rate in d.dense_flops_per_s.items():
            rows.append({"chip": d.key, "name": d.name, "dtype": dtype, "tflop_per_s": rate / TFLOPS,
                         "ridge": rate / d.hbm_bytes_per_s,
                         "bytes_per_element": bytes_per_element(dtype),
                         "batch": compute_bound_batch(n, k, dtype, d.key)})
    return pd.DataFrame(rows)


def batch_curve(n: int, k: int, dtype: str = "bfloat16", chip: str = "trn2", *,
                m_max: int = 16384, n_points: int = 64) -> pd.DataFrame:
    """A matmul's path on the roofline as its batch m grows from 1 to ``m_max``.

    Each row is one m: intensity ``2 / (b·(1/m + 1/n + 1/k))`` and the attainable rate
    ``min(peak, intensity · HBM bytes/s)``. The integers on either side of
    :func:`compute_bound_batch` are included, so the crossing of the ridge is on the path.

    Parameters
    ----------
    n, k : int
        The fixed dimensions (>= 1).
    dtype, chip : str
        As for :func:`matmul_bound`.
    m_max : int
        Largest batch (>= 2).
    n_points : int
        Log-spaced batches between 1 and ``m_max`` (>= 2; integers, duplicates dropped).

    Returns
    -------
    pandas.DataFrame
        Columns ``m``, ``intensity`` (FLOP/byte), ``flops_per_s``, ``tflop_per_s`` (TFLOP/s),
        ``bound`` ("HBM" or "tensor engine"), one row per distinct m, in order.

    Examples
    --------
    >>> c = batch_curve(8192, 8192, "bf16", "trn2", m_max=1024, n_points=8)
    >>> int(c.loc[c.bound == "tensor engine", "m"].min())
    244
    """
    inv = _reciprocal("n", n) + _reciprocal("k", k)
    m_max = integer("m_max", m_max, minimum=2, maximum=10**9)
    n_points = integer("n_points", n_points, minimum=2, maximum=10_000)
    d = device(chip)
    peak, b = d.dense_flops_per_s[dtype], bytes_per_element(dtype)
    m_star = compute_bound_batch(n, k, dtype, chip)
    m = np.geomspace(1, m_max, n_points).round()
    if m_star < m_max:
        m = np.concatenate([m, [math.floor(m_star), math.ceil(m_star)]])
    m = np.unique(np.clip(m, 1, m_max))
    intensity = 2.0 / (b * (1.0 / m + inv))
    rate = np.minimum(peak, intensity * d.hbm_bytes_per_s)
    return pd.DataFrame({"m": m.astype(int), "intensity": intensity, "flops_per_s": rate,
                         "tflop_per_s": rate / TFLOPS,
                         "bound": np.where(m >= m_star, "tensor engine", "HBM")})


# --------------------------------------------------------------------------- every engine, not only the tensor engine

__all__ += ["EngineBounds", "engine_bounds", "ELEMENTWISE_OPS", "elementwise_op_bounds", "engine_element_rates",
            "ENGINE_RATES"]

#: element-wise operations per element of the input, by engine, as the course counts them for an
#: op applied along rows: softmax = max, subtract, sum and scale on the vector engine and exp on the
#: scalar (activation) engine; RMSNorm = square, sum, scale by the row's 1/rms and by the gain on the
#: vector engine (one rsqrt per row, on the scalar engine, is negligible). One op = one element through
#: the engine's data path (:func:`engine_element_rates`).
ELEMENTWISE_OPS: dict[str, dict[str, float]] = {
    "softmax": {"vector": 4.0, "scalar": 1.0},
    "rmsnorm": {"vector": 4.0, "scalar": 0.0},
}


@dataclass(frozen=True)
class EngineBounds:
    """Time of one operation on each engine of a chip, and the two bounds they give.

    The engines (tensor, vector, scalar) and HBM run concurrently, so the operation takes at
    least the slowest one (``lower_s``, perfect overlap) and at most their sum (``upper_s``,
    none); ``bound`` names the slowest. Base units (s).
    """

    chip: str
    times_s: dict
    lower_s: float
    upper_s: float
    bound: str

    def __repr__(self) -> str:
        return (f"EngineBounds({self.chip}: {self.lower_s * 1e6:.3g} µs ≤ t ≤ {self.upper_s * 1e6:.3g} µs, "
                f"{self.bound}-bound)")

    def _repr_markdown_(self) -> str:
        parts = ", ".join(f"{k} {v * 1e6:.3g} µs" for k, v in self.times_s.items())
        return (f"**{self.chip}**: {self.lower_s * 1e6:.3g} µs ≤ t ≤ {self.upper_s * 1e6:.3g} µs "
                f"({parts}; {self.bound} binds)")


#: how :func:`engine_bounds` rates the vector and scalar engines
ENGINE_RATES: tuple[str, ...] = ("data-path", "marketing")


def engine_element_rates(chip: str = "trn2", dtype: str = "bfloat16", rates: str = "data-path") -> dict:
    """Vector- and scalar-engine rates of a whole chip, elements (ops) per second.

    ``"data-path"`` (the default): each engine's data-path width in elements per cycle for
    ``dtype`` (the NKI architecture guides, ``*_elements_per_cycle`` in ``data/cores.csv``) times
    its clock, on every physical NeuronCore: a one-input instruction on a ``[128, N]`` tile moves
    ``width`` elements per cycle. ``"marketing"``: the FP32 TFLOPS of the NeuronCore architecture
    pages, read as one op per FLOP (a sourced alternative, 2 to 8 times higher than the data paths).
    The LNC setting groups cores but leaves the chip's total unchanged.

    References
    ----------
    AWS NKI architecture guides for Trainium, Trainium2 and Trainium3 (engine data-path widths and
    clocks); AWS NeuronCore-v2/v3/v4 architecture pages (vector and scalar FP32 TFLOPS).

    Examples
    --------
    >>> r = engine_element_rates("trn2")
    >>> round(r["vector"] / 1e12, 2), round(r["scalar"] / 1e12, 2)   # 8 cores × 512 × 0.96 GHz; × 128 × 1.2 GHz
    (3.93, 1.23)
    >>> m = engine_element_rates("trn2", rates="marketing")
    >>> round(m["scalar"] / r["scalar"], 1)
    7.8
    """
    c = specs.chip(chip)
    rates = choice("rates", rates, ENGINE_RATES)
    n = c.neuron_cores
    if rates == "marketing":
        return {"vector": n * c.core.vector_fp32_flops_per_s, "scalar": n * c.core.scalar_fp32_flops_per_s}
    key = "bf16" if dtype in ("bfloat16", "float16") else ("fp8" if str(dtype).startswith("float8") else "fp32")
    out = {}
    for engine in ("vector", "scalar"):
        width = specs.fact(c.core.name, f"{engine}_elements_per_cycle.{key}").value
        out[engine] = n * float(width) * c.core.clocks_hz[engine]
    return out


def engine_bounds(chip: str = "trn2", *, tensor_flops: float = 0.0, vector_flops: float = 0.0,
                  scalar_flops: float = 0.0, hbm_bytes: float = 0.0, dtype: str = "bfloat16",
                  rates: str = "data-path") -> EngineBounds:
    """Lower and upper bounds on an operation's time from every engine's work, on a whole chip.

    Each engine's time is its work over its rate on all of the chip's NeuronCores: tensor-engine
    FLOPs at the dense ``dtype`` rate, vector- and scalar-engine ops (one per element an
    instruction processes) at :func:`engine_element_rates` (``rates``: the NKI guides' data-path
    widths by default, the architecture pages' FP32 TFLOPS as the alternative), HBM bytes at the
    chip's bandwidth. ``max ≤ t ≤ sum``.

    References
    ----------
    Austin et al., "How to Scale Your Model" (2025), part 1 (T_lower = max, T_upper = sum of the
    compute and communication times) and part 2 (TPU MXU against VPU); AWS NKI architecture guides
    (engine data-path widths); AWS Neuron docs, NeuronCore-v2/v3/v4 architecture pages (FLOP/s).

    Examples
    --------
    >>> b = engine_bounds("trn2", vector_flops=4e9, scalar_flops=1e9, hbm_bytes=4e9)
    >>> b.bound, round(b.lower_s * 1e3, 3), round(b.upper_s * 1e3, 3)
    ('hbm', 1.379, 3.21)
    >>> engine_bounds("trn2", vector_flops=4e9, scalar_flops=1e9, hbm_bytes=4e9, rates="marketing").bound
    'hbm'
    """
    c = specs.chip(chip)
    er = engine_element_rates(chip, dtype, rates)
    work = {"tensor": (positive("tensor_flops", tensor_flops, allow_zero=True), c.dense_flops_per_s[dtype]),
            "vector": (positive("vector_flops", vector_flops, allow_zero=True), er["vector"]),
            "scalar": (positive("scalar_flops", scalar_flops, allow_zero=True), er["scalar"]),
            "hbm": (positive("hbm_bytes", hbm_bytes, allow_zero=True), c.hbm_bytes_per_s)}
    times = {k: float(w / r) for k, (w, r) in work.items()}
    bound = max(times, key=times.get)
    return EngineBounds(c.key, times, max(times.values()), sum(times.values()), bound)


def elementwise_op_bounds(op: str, n_elements: float, chip: str = "trn2", dtype: str = "bfloat16",
                          rates: str = "data-path") -> EngineBounds:
    """:func:`engine_bounds` of a softmax or RMSNorm over ``n_elements`` values of ``dtype``.

    Work from :data:`ELEMENTWISE_OPS`; HBM traffic one read and one write of the tensor (an op
    fused into its neighbours moves less: then the engines bind sooner).

    Examples
    --------
    >>> b = elementwise_op_bounds("softmax", 8192 * 8192, "trn2")   # unfused: HBM binds
    >>> b.bound, b.lower_s <= b.upper_s
    ('hbm', True)
    """
    ops = ELEMENTWISE_OPS[choice("op", op, ELEMENTWISE_OPS)]
    n = positive("n_elements", n_elements)
    return engine_bounds(chip, vector_flops=ops["vector"] * n, scalar_flops=ops["scalar"] * n,
                         hbm_bytes=2.0 * n * bytes_per_element(dtype), dtype=dtype, rates=rates)
