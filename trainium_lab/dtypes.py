"""Number formats: the one vocabulary of dtype names, labels and sizes for the whole package.

Every module that takes a ``dtype`` reads it through this one: :mod:`trainium_lab.specs`
(per-dtype rate tables), :mod:`trainium_lab.numerics` (rounding), :mod:`trainium_lab.roofline`
(bytes per element), :mod:`trainium_lab.kernels`, :mod:`trainium_lab.serving`... So every
function accepts the same spellings:

* the canonical names, as numpy and ml_dtypes name the types (``"float32"``, ``"bfloat16"``,
  ``"float16"``, ``"float8_e4m3fn"``, ``"float8_e5m2"``, ``"float8_e3m4"``,
  ``"float4_e2m1fn"``), and the names of the formats that are not a numpy type (``"tf32"``,
  and the OCP MX formats ``"mxfp8_e4m3"``, ``"mxfp8_e5m2"``, ``"mxfp4"``);
* the short aliases of the vendors' pages (``"fp32"``, ``"bf16"``, ``"fp16"``, ``"e4m3"``,
  ``"e5m2"``, ``"fp8"``, ``"mxfp8"`` (MXFP8 with E4M3 elements), ``"fp4"``...), in any letter
  case;
* numpy dtypes and scalar types (``np.float32``, ``ml_dtypes.bfloat16``).

``"fp8"`` (and AWS's ``"cfp8"``) name the 8-bit float family, whose members share one
rate on every chip in ``data/``: where one element type is needed they mean E4M3, the
format for weights and activations (Micikevicius et al. 2022). ``rate_key`` gives the key
of the per-dtype rate tables of ``data/`` (``"bf16"``, ``"fp8"``...), which keep the
vendors' short names.

Pure: imports the package's validation helpers, and numpy and ml_dtypes when a size is asked
for (so that :mod:`trainium_lab.specs` can use it without an import cycle or an import cost).

References
----------
P. Micikevicius et al., "FP8 Formats for Deep Learning", 2022, arXiv:2209.05433 (E4M3, E5M2).
OCP Microscaling Formats (MX) Specification v1.0, 2023 (MXFP8, MXFP4: one 8-bit E8M0 scale
per block of 32 elements, section 5).
NVIDIA, "TensorFloat-32 in the A100 GPU" (TF32: an FP32 operand read with a 10-bit mantissa;
stored as FP32).

Examples
--------
>>> canonical("bf16"), canonical("E4M3"), canonical("fp32")
('bfloat16', 'float8_e4m3fn', 'float32')
>>> rate_key("bfloat16"), rate_key("float8_e5m2"), rate_key("mxfp8_e5m2")
('bf16', 'fp8', 'mxfp8')
>>> bytes_per_element("bf16"), bytes_per_element("mxfp4")
(2.0, 0.53125)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from trainium_lab._validate import UnknownNameError

__all__ = ["NumberFormat", "NUMBER_FORMATS", "ALIASES", "DEFAULT", "canonical",
           "number_format", "rate_key", "label", "bytes_per_element", "accepted_names"]


@dataclass(frozen=True)
class NumberFormat:
    """One number format: its names, the type of one stored element and any block scale.

    Attributes
    ----------
    name : str
        Canonical name (numpy / ml_dtypes name where the format is a numpy type).
    label : str
        Short label for charts and prose (``"BF16"``).
    rate_key : str
        Key of the per-dtype rate tables in ``data/`` (``"bf16"``, ``"fp8"``...).
    element_type : str
        numpy / ml_dtypes type of one stored element (TF32 operands are stored as FP32).
    block_size : int
        Elements that share one scale (32 for the MX formats; 0: no shared scale).
    scale_type : str
        Type of the shared scale (``"float8_e8m0fnu"`` for MX), ``""`` without one.
    aliases : tuple of str
        Other spellings accepted for it (lower case).
    """

    name: str
    label: str
    rate_key: str
    element_type: str
    aliases: tuple[str, ...] = ()
    block_size: int = 0
    scale_type: str = ""

    @property
    def bits_per_element(self) -> float:
        """Bits one element takes in memory, its share of a block scale included."""
        import ml_dtypes

        bits = float(ml_dtypes.finfo(_np_type(self.element_type)).bits)
        if self.block_size:
            bits += ml_dtypes.finfo(_np_type(self.scale_type)).bits / self.block_size
        return bits

    @property
    def bytes_per_element(self) -> float:
        """Bytes one element takes in memory (``bits_per_element / 8``)."""
        return self.bits_per_element / 8

    def __repr__(self) -> str:
        return f"NumberFormat({self.name!r}, {self.bytes_per_element:g} bytes)"


def _np_type(name: str) -> Any:
    import ml_dtypes  # imported on use: specs (and so the whole package) imports this module
    import numpy as np

    return getattr(ml_dtypes, name, None) or getattr(np, name)


#: every number format the course names, by canonical name, in the order of the rate tables of
#: ``data/`` (BF16 first)
NUMBER_FORMATS: dict[str, NumberFormat] = {f.name: f for f in (
    NumberFormat("bfloat16", "BF16", "bf16", "bfloat16", ("bf16",)),
    NumberFormat("float16", "FP16", "fp16", "float16", ("fp16", "f16", "half")),
    NumberFormat("tf32", "TF32", "tf32", "float32", ("tensorfloat32",)),
    NumberFormat("float32", "FP32", "fp32", "float32", ("fp32", "f32", "single")),
    NumberFormat("float8_e4m3fn", "FP8 E4M3", "fp8", "float8_e4m3fn",
                 ("e4m3", "fp8_e4m3", "fp8", "cfp8")),
    NumberFormat("float8_e5m2", "FP8 E5M2", "fp8", "float8_e5m2", ("e5m2", "fp8_e5m2")),
    NumberFormat("float8_e3m4", "FP8 E3M4", "fp8", "float8_e3m4", ("e3m4", "fp8_e3m4")),
    NumberFormat("mxfp8_e4m3", "MXFP8 E4M3", "mxfp8", "float8_e4m3fn", ("mxfp8",), 32,
                 "float8_e8m0fnu"),
    NumberFormat("mxfp8_e5m2", "MXFP8 E5M2", "mxfp8", "float8_e5m2", (), 32, "float8_e8m0fnu"),
    NumberFormat("mxfp4", "MXFP4", "mxfp4", "float4_e2m1fn", ("mxfp4_e2m1",), 32, "float8_e8m0fnu"),
    NumberFormat("float4_e2m1fn", "FP4 E2M1", "fp4", "float4_e2m1fn", ("fp4", "e2m1", "fp4_e2m1")),
)}

#: every accepted spelling (lower case) -> canonical name
ALIASES: dict[str, str] = {
    **{f.name.lower(): f.name for f in NUMBER_FORMATS.values()},
    **{a: f.name for f in NUMBER_FORMATS.values() for a in f.aliases},
}

#: the package's default dtype for matmuls, weights and activations
DEFAULT = "bfloat16"


def _names(name: str, values: object) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, set, frozenset, dict)):
        raise ValueError(f"{name} must be a list of format names, got {values!r}")
    return tuple(str(v) for v in values)


def accepted_names(allowed: Iterable[str] | None = None) -> tuple[str, ...]:
    """Every spelling accepted for the formats in ``allowed`` (default: all), canonical first.

    >>> accepted_names(["bfloat16"])
    ('bfloat16', 'bf16')
    """
    keep = NUMBER_FORMATS if allowed is None else _names("allowed", allowed)
    return tuple(f.name for f in NUMBER_FORMATS.values() if f.name in keep) + tuple(
        a for f in NUMBER_FORMATS.values() if f.name in keep for a in f.aliases)


def canonical(dtype: Any, name: str = "dtype", allowed: Iterable[str] | None = None) -> str:
    """The canonical name of a number format, from any accepted spelling.

    Parameters
    ----------
    dtype : str, numpy dtype or scalar type
        ``"bf16"``, ``"BFloat16"``, ``np.float32``, ``ml_dtypes.float8_e5m2``...
    name : str
        The parameter's name, for the error message.
    allowed : iterable of str, optional
        Canonical names the caller supports (e.g. the formats numpy can cast to); by
        default every format of :data:`NUMBER_FORMATS`.

    Raises
    ------
    ValueError
        Naming ``name`` and listing the accepted formats, each with its aliases in
        parentheses (also a ``KeyError``).

    Examples
    --------
    >>> import numpy as np
    >>> canonical("FP16"), canonical(np.float32)
    ('float16', 'float32')
    >>> try:
    ...     canonical("mxfp8", allowed=("bfloat16", "float32"))
    ... except ValueError as exc:
    ...     print(exc)
    dtype must be one of 'bfloat16' (bf16), 'float32' (fp32, f32, single); got 'mxfp8'
    """
    key = None
    if isinstance(dtype, str):
        key = ALIASES.get(dtype.strip().lower())
    elif isinstance(dtype, type) or type(dtype).__name__.endswith("DType") or \
            type(dtype).__module__.startswith("numpy"):
        import numpy as np

        try:
            key = ALIASES.get(np.dtype(dtype).name)
        except TypeError:
            key = None
    allowed_names = tuple(NUMBER_FORMATS) if allowed is None else _names("allowed", allowed)
    if key is None or key not in allowed_names:
        listed = ", ".join(repr(f.name) + (f" ({', '.join(f.aliases)})" if f.aliases else "")
                           for f in NUMBER_FORMATS.values() if f.name in allowed_names)
        text = repr(dtype)
        raise UnknownNameError(f"{name} must be one of {listed}; got "
                               f"{text if len(text) <= 40 else text[:37] + '...'}")
    return key


def number_format(dtype: Any, name: str = "dtype") -> NumberFormat:
    """The :class:`NumberFormat` for any accepted spelling.

    >>> number_format("e5m2").label
    'FP8 E5M2'
    """
    return NUMBER_FORMATS[canonical(dtype, name)]


def rate_key(dtype: Any, name: str = "dtype") -> str:
    """Key of the per-dtype rate tables in ``data/`` (``dense_flops_per_s.<key>``).

    Both 8-bit float formats share the key ``"fp8"``: every chip in ``data/`` runs them at
    one rate.

    >>> rate_key("float8_e4m3fn"), rate_key("FP32"), rate_key("tf32")
    ('fp8', 'fp32', 'tf32')
    """
    return number_format(dtype, name).rate_key


def label(dtype: Any, name: str = "dtype") -> str:
    """Short label for charts and prose.

    >>> label("bf16"), label("float8_e4m3fn")
    ('BF16', 'FP8 E4M3')
    """
    return number_format(dtype, name).label


def bytes_per_element(dtype: Any) -> float:
    """Bytes one element of ``dtype`` takes in memory.

    Read from the element type's bit width (numpy / ml_dtypes). TF32 operands are stored
    as FP32. MX formats add their shared 8-bit scale, one per 32 elements (OCP MX v1.0).

    Parameters
    ----------
    dtype : str
        Any accepted spelling (:func:`accepted_names`): ``"bf16"``/``"bfloat16"``, ``"fp16"``,
        ``"tf32"``, ``"fp32"``, ``"fp8"``/``"float8_e4m3fn"``/``"float8_e5m2"``, ``"mxfp8"``,
        ``"mxfp4"``, ``"fp4"``.

    Returns
    -------
    float
        Bytes per element.

    References
    ----------
    OCP Microscaling Formats (MX) Specification v1.0, 2023, section 5.

    Examples
    --------
    >>> bytes_per_element("bfloat16"), bytes_per_element("fp8"), bytes_per_element("tf32")
    (2.0, 1.0, 4.0)
    >>> bytes_per_element("mxfp4")
    0.53125
    """
    return number_format(dtype).bytes_per_element
