"""Chapter 02's model: BF16 and FP8 formats, round-to-nearest and stochastic rounding.

Pure numpy: arrays and tidy DataFrames in and out, no charts or widgets. Format
facts come from ``ml_dtypes.finfo`` (which passes ``float16`` and ``float32``
through to ``numpy.finfo``); nothing here re-derives them.

Rounding conventions (see :func:`round_to`):

* ``"nearest"`` is the ``ml_dtypes`` cast, round to nearest with ties to even
  (IEEE 754 RNE), including each format's own overflow, infinity and NaN rules:
  ``float8_e4m3fn`` has no infinity, so overflow and ±inf become NaN there.
* ``"stochastic"`` rounds to one of the two neighbours with probability
  proportional to closeness, so ``E[round(x)] = x`` for every value inside the
  format's range. The conventions at the edges are listed in :func:`round_to`.

References
----------
.. [1] AWS Neuron documentation, "Neuron Rounding Modes" (RNE and stochastic rounding,
   ``NEURON_RT_STOCHASTIC_ROUNDING_EN``), aws-neuron/aws-neuron-sdk:
   about-neuron/arch/neuron-features/rounding-modes.rst.
.. [2] S. Gupta, A. Agrawal, K. Gopalakrishnan, P. Narayanan, "Deep Learning with
   Limited Numerical Precision", ICML 2015, arXiv:1502.02551 (stochastic rounding).
.. [3] P. Micikevicius et al., "FP8 Formats for Deep Learning", 2022, arXiv:2209.05433
   (E4M3 and E5M2, Table 1; per-tensor scaling).
.. [4] P. Micikevicius et al., "Mixed Precision Training", ICLR 2018, arXiv:1710.03740
   (FP32 master copy of the weights).
.. [5] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
   Parameter Models", SC 2020, arXiv:1910.02054 (2 + 2 + 12 bytes per parameter with Adam).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import pandas as pd

from trainium_lab import dtypes, specs
from trainium_lab._validate import choice, finite_number, in_range, integer, positive, sequence
from trainium_lab.sizing import DEFAULT_GRAD_BYTES_PER_PARAM, bf16_recipe
from trainium_lab.sizing import training_state_bytes  # re-exported: one home, sizing's recipes
from trainium_lab.units import GiB, format_bytes

__all__ = [
    "FORMATS", "MODES", "LABELS", "FormatInfo", "format_info", "formats_table", "ulp",
    "round_to", "neighbours", "BitPattern", "bit_fields", "spacing_table",
    "RoundingDraws", "rounding_draws", "repeated_updates", "TrainingCurves",
    "train_linear_regression", "VARIANTS", "bytes_per_param",
    "training_state_bytes", "MasterWeightsSaving", "master_weights_saving",
    "fp8_scale", "quantization_error", "fp8_scaling_demo",
]

#: the formats this chapter covers, named as numpy / ml_dtypes name them
FORMATS: tuple[str, ...] = ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
#: rounding modes accepted by :func:`round_to`
MODES: tuple[str, ...] = ("nearest", "stochastic")
#: short labels for charts and prose (from :mod:`trainium_lab.dtypes`, the one table of formats)
LABELS: dict[str, str] = {name: dtypes.label(name) for name in FORMATS}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def _dtype_name(dtype: Any, name: str = "dtype") -> str:
    """Canonical format name for any spelling :mod:`trainium_lab.dtypes` accepts (``"bf16"``,
    ``"e4m3"``, a numpy dtype...), limited to the formats numpy can cast to (:data:`FORMATS`)."""
    return dtypes.canonical(dtype, name, allowed=FORMATS)


def _np_dtype(dtype_name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, dtype_name, dtype_name))


@dataclass(frozen=True)
class FormatInfo:
    """Facts about one floating-point format, read from ``ml_dtypes.finfo``.

    ``exponent_bits`` and ``mantissa_bits`` count stored bits (the implicit
    leading 1 of normal numbers is not stored). ``eps`` is the spacing just
    above 1.0; ``bias`` is the exponent bias (``1 - minexp``); ``min_exponent``
    is the exponent of ``min_normal``.
    """

    name: str
    label: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    min_exponent: int
    max_finite: float
    min_normal: float
    min_subnormal: float
    eps: float
    has_inf: bool

    @property
    def bytes(self) -> int:
        """Bytes per value."""
        return self.bits // 8

    @property
    def dynamic_range_binades(self) -> float:
        """log2(max_finite / min_subnormal): how many powers of two the format spans."""
        return math.log2(self.max_finite / self.min_subnormal)


def format_info(dtype: Any) -> FormatInfo:
    """Bits, range and precision of one format.

    Parameters
    ----------
    dtype : str or numpy dtype
        One of :data:`FORMATS` (or an alias such as ``"bf16"``, ``"e4m3"``).

    Returns
    -------
    FormatInfo

    References
    ----------
    Micikevicius et al. 2022, arXiv:2209.05433, Table 1 (FP8); ``ml_dtypes.finfo``.

    Examples
    --------
    >>> f = format_info("float8_e4m3fn")
    >>> f.exponent_bits, f.mantissa_bits, f.max_finite, f.has_inf
    (4, 3, 448.0, False)
    >>> format_info("bf16").eps == 2.0 ** -7
    True
    """
    return _format_info(_dtype_name(dtype))


@functools.lru_cache(maxsize=None)
def _format_info(name: str) -> FormatInfo:
    dt = _np_dtype(name)
    fi = ml_dtypes.finfo(dt)
    has_inf = bool(np.isinf(np.array(np.inf, np.float32).astype(dt)))
    return FormatInfo(name=name, label=dtypes.label(name), bits=int(fi.bits),
                      exponent_bits=int(fi.nexp), mantissa_bits=int(fi.nmant),
                      bias=1 - int(fi.minexp), min_exponent=int(fi.minexp),
                      max_finite=float(fi.max), min_normal=float(fi.smallest_normal),
                      min_subnormal=float(fi.smallest_subnormal), eps=float(fi.eps),
                      has_inf=has_inf)


def formats_table(dtypes: tuple[str, ...] = FORMATS) -> pd.DataFrame:
    """One row per format: bits, exponent and mantissa bits, range and precision.

    Examples
    --------
    >>> df = formats_table()
    >>> list(df.format)
    ['float32', 'bfloat16', 'float16', 'float8_e4m3fn', 'float8_e5m2']
    >>> int(df.set_index("format").loc["float8_e5m2", "max_finite"])
    57344
    """
    rows = []
    for d in sequence("dtypes", dtypes, lambda _name, x: x):
        f = format_info(d)
        rows.append({"format": f.name, "label": f.label, "bits": f.bits,
                     "exponent_bits": f.exponent_bits, "mantissa_bits": f.mantissa_bits,
                     "max_finite": f.max_finite, "min_normal": f.min_normal,
                     "min_subnormal": f.min_subnormal, "eps": f.eps,
                     "binades": f.dynamic_range_binades, "has_inf": f.has_inf})
    return pd.DataFrame(rows)


def ulp(x: Any, dtype: Any) -> np.ndarray | float:
    """Spacing of ``dtype`` at ``x``: the gap from ``|x|`` to the next larger value.

    Inside a binade [2^e, 2^(e+1)) the spacing is 2^(e - mantissa_bits); below
    ``min_normal`` it is constant at ``min_subnormal``. Computed in float64.

    Parameters
    ----------
    x : float or array_like
        Finite values with magnitude up to the format's ``max_finite``. Larger values
        are not in the format at all (they overflow: ``float8_e4m3fn`` casts them to
        NaN, the others to ±inf), so they have no gap and raise ``ValueError``.
    dtype : str
        One of :data:`FORMATS`.

    Returns
    -------
    float or numpy.ndarray (float64)

    Examples
    --------
    >>> ulp(1.0, "bfloat16") == 2.0 ** -7
    True
    >>> float(ulp(300.0, "float8_e4m3fn"))
    32.0
    >>> ulp(1000.0, "float8_e4m3fn")
    Traceback (most recent call last):
    ...
    ValueError: x must be within ±448 for float8_e4m3fn: larger values overflow (this format casts them to NaN); got a magnitude of 1000
    """
    f = format_info(dtype)
    try:
        a = np.abs(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"x must be real numbers ({exc})") from None
    if not np.all(np.isfinite(a)):
        raise ValueError("x must be finite")
    if np.any(a > f.max_finite):
        to = "NaN" if not f.has_inf else "±inf"
        raise ValueError(f"x must be within ±{f.max_finite:g} for {f.name}: larger values overflow "
                         f"(this format casts them to {to}); got a magnitude of {float(a.max()):g}")
    _, e = np.frexp(a)  # a = m * 2**e with m in [0.5, 1): floor(log2 a) = e - 1
    exponent = np.where(a == 0, f.min_exponent, np.maximum(e - 1, f.min_exponent))
    out = np.ldexp(1.0, exponent - f.mantissa_bits)
    return float(out) if np.ndim(out) == 0 else out


def _as_float32(x: Any) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except Exception as exc:  # pragma: no cover - numpy raises many types here
        raise ValueError(f"x must be an array of real numbers ({exc})") from exc
    if arr.dtype.kind not in "biuf" and arr.dtype.name not in FORMATS:
        raise ValueError(f"x must be an array of real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32 becomes ±inf
        return arr.astype(np.float32, copy=False)


def _rng(rng: Any) -> np.random.Generator:
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise ValueError(f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


def _nearest(x32: np.ndarray, name: str) -> np.ndarray:
    if name == "float32":
        return x32.copy()
    with np.errstate(over="ignore", invalid="ignore"):  # the format's own overflow/NaN rules
        return x32.astype(_np_dtype(name)).astype(np.float32)


def _draws(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """The random numbers stochastic rounding to ``name`` consumes for ``shape`` values."""
    n = int(np.prod(shape))
    if name == "bfloat16":  # 16 uniform bits per value, four per 64-bit draw
        raw = rng.bit_generator.random_raw((n + 3) // 4)
        return np.asarray(raw, dtype=np.uint64).view(np.uint16)[:n].reshape(shape)
    return rng.random(shape, dtype=np.float32)


def _stochastic_bf16(x32: np.ndarray, r16: np.ndarray) -> np.ndarray:
    # BF16 is the top half of a float32, so adding a uniform 16-bit integer to the
    # bit pattern and dropping the low half rounds the magnitude up with
    # probability (low half) / 2**16, which is exactly the distance ratio. This
    # holds across binades and for subnormals; a carry out of the largest finite
    # value reaches the infinity pattern.
    x32 = np.ascontiguousarray(x32)
    out = np.add(x32.view(np.uint32), r16, dtype=np.uint32)
    np.bitwise_and(out, np.uint32(0xFFFF0000), out=out)
    res = out.view(np.float32)
    nan = np.isnan(x32)
    if nan.any():  # a NaN whose payload sits in the low half could otherwise turn into inf
        res[nan] = np.float32(np.nan)
    return res


def _stochastic_generic(x32: np.ndarray, f: FormatInfo, u: np.ndarray) -> np.ndarray:
    # Exact float32 arithmetic: q = |x| / ulp has an integer part (the round-toward-
    # zero neighbour, in ulps) and a fraction (the probability of rounding away).
    # Valid while the format's smallest spacing is a normal float32 (FP16 and FP8).
    a = np.abs(x32)
    # 2**floor(log2 |x|) is |x| with its mantissa bits cleared; clamped to the format's
    # normal range, so subnormals share min_normal's spacing and overflow uses max's
    clamped = np.minimum(np.maximum(a, np.float32(f.min_normal)), np.float32(f.max_finite))
    top = np.bitwise_and(clamped.view(np.uint32), np.uint32(0x7F800000)).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = top * np.float32(2.0 ** -f.mantissa_bits)
        q = a / spacing
        low = np.floor(q)
        mag = (low + (u < (q - low))) * spacing
        over = mag > np.float32(f.max_finite)
    out = np.copysign(mag, x32)
    if over.any():
        out[over] = np.copysign(np.float32(np.inf), x32[over]) if f.has_inf else np.float32(np.nan)
    return out


def _stochastic(x32: np.ndarray, name: str, draws: np.ndarray) -> np.ndarray:
    if name == "float32":
        return x32.copy()
    if name == "bfloat16":
        return _stochastic_bf16(x32, draws)
    return _stochastic_generic(x32, _format_info(name), draws)


def round_to(x: Any, dtype: Any, mode: str = "nearest", rng: Any = None) -> np.ndarray:
    """Round values to a narrower format and return them as float32.

    Every returned value is exactly representable in ``dtype``, so
    ``round_to(x, d).astype(d).astype(np.float32)`` gives the same bits back.

    Parameters
    ----------
    x : array_like
        Real values; converted to float32 first (float64 input is rounded once to
        float32 before being rounded to ``dtype``).
    dtype : str
        One of :data:`FORMATS` (``"bfloat16"``, ``"float8_e4m3fn"``, ...).
    mode : {"nearest", "stochastic"}
        ``"nearest"`` is the ``ml_dtypes`` cast, bit for bit (round to nearest,
        ties to even). ``"stochastic"`` rounds a value lying a fraction ``p`` of the
        way from its round-toward-zero neighbour ``lo`` to the next value away from
        zero ``hi`` up to ``hi`` with probability ``p`` and down to ``lo`` otherwise,
        so the expected result equals the input.
    rng : numpy.random.Generator, int or None
        Source of randomness for ``"stochastic"``; an int seeds a new generator;
        ``None`` draws a fresh unseeded one. Ignored by ``"nearest"``.

    Returns
    -------
    numpy.ndarray of float32, same shape as ``x``.

    Notes
    -----
    Stochastic rounding at the edges (this module's convention):

    * values already representable (including ±0, subnormals of the format and
      ``max_finite``) are returned unchanged: ``p = 0``;
    * values below the smallest subnormal round to 0 or to it, keeping their sign;
    * finite values beyond ``max_finite`` round down to ``max_finite`` or up to the
      overflow value, as though the next value were ``max_finite + ulp``; values
      at or beyond that always overflow. The overflow value is ±inf for formats
      with infinities and NaN for ``float8_e4m3fn``, which has none (the same rule
      as its ``"nearest"`` cast; it does not saturate);
    * ±inf stays ±inf (NaN for ``float8_e4m3fn``) and NaN stays NaN.

    The BF16 path is exact (16 uniform random bits per value). The FP16 and FP8 path
    compares the fraction with a float32 uniform, so probabilities are exact to
    2^-24.

    References
    ----------
    Gupta et al. 2015, arXiv:1502.02551, eq. (2) (stochastic rounding);
    AWS Neuron "Neuron Rounding Modes" (RNE and SR on NeuronCore-v2 and later).

    Examples
    --------
    >>> import numpy as np
    >>> round_to([1.0 + 1e-3, 1.01], "bfloat16").tolist()
    [1.0, 1.0078125]
    >>> r = round_to(np.full(100_000, 1.001), "bfloat16", "stochastic", rng=0)
    >>> sorted(set(r.tolist()))
    [1.0, 1.0078125]
    >>> abs(float(r.mean()) - 1.001) < 1e-4
    True
    """
    name = _dtype_name(dtype)
    mode = choice("mode", mode, MODES)
    x32 = _as_float32(x)
    if mode == "nearest" or name == "float32":
        return _nearest(x32, name)
    return _stochastic(x32, name, _draws(name, x32.shape, _rng(rng)))


def neighbours(value: float, dtype: Any) -> tuple[float, float, float]:
    """The two representable values around ``value`` and the chance of the far one.

    Returns ``(lo, hi, p)``: ``lo`` is ``value`` rounded toward zero, ``hi`` the next
    value away from zero, ``p`` the probability that stochastic rounding picks
    ``hi`` ((|value| - |lo|) / (|hi| - |lo|)). For a representable value ``lo ==
    value`` and ``p == 0``.

    Examples
    --------
    >>> lo, hi, p = neighbours(1.001, "bfloat16")
    >>> lo, hi, round(p, 4)
    (1.0, 1.0078125, 0.128)
    >>> neighbours(-3.375, "float8_e4m3fn")
    (-3.25, -3.5, 0.5)
    """
    f = format_info(dtype)
    value = finite_number("value", value)
    v = float(np.float32(value))
    if abs(v) > f.max_finite:
        raise ValueError(f"value must be within ±{f.max_finite:g} for {f.name}, got {value!r}")
    step = ulp(v, f.name)
    a = abs(v)
    lo = math.floor(a / step) * step
    p = (a - lo) / step
    hi = lo + step if p > 0 else lo
    sign = -1.0 if math.copysign(1.0, v) < 0 else 1.0
    return sign * lo, sign * hi, p


@dataclass(frozen=True)
class BitPattern:
    """The bits of one value stored in a format (after round to nearest): :func:`bit_fields`.

    Attributes
    ----------
    format : str
        The format's canonical name.
    value : float
        The value asked for; ``stored`` is the value the format actually holds.
    bits : tuple of int
        The stored bits, sign first.
    sign : int
        The sign bit.
    exponent_field, mantissa : int
        The stored exponent field (biased) and mantissa field, as unsigned integers.
    exponent : int or None
        The unbiased exponent (``min_exponent`` for zero and subnormals; None for inf, NaN).
    kind : str
        ``"normal"``, ``"subnormal"``, ``"zero"``, ``"inf"`` or ``"nan"``.
    """

    format: str
    value: float
    stored: float
    bits: tuple[int, ...]
    sign: int
    exponent_field: int
    mantissa: int
    exponent: int | None
    kind: str

    def table(self) -> pd.DataFrame:
        """One row per bit: ``position`` (0 = the sign), ``bit``, ``field``."""
        f = format_info(self.format)
        fields = ["sign"] + ["exponent"] * f.exponent_bits + ["mantissa"] * f.mantissa_bits
        return pd.DataFrame({"position": range(f.bits), "bit": list(self.bits), "field": fields})

    def _repr_markdown_(self) -> str:
        return (f"{self.value:.8g} in {format_info(self.format).label}: stored as **{self.stored:.8g}** "
                f"({self.kind}), bits `{''.join(map(str, self.bits))}`")


def bit_fields(value: float, dtype: Any) -> BitPattern:
    """The bits of ``value`` stored in ``dtype`` (after round to nearest), field by field.

    Parameters
    ----------
    value : float
        Any float32 number, inf or NaN.
    dtype : str
        A format of :data:`FORMATS` (or an alias such as ``"bf16"``).

    Returns
    -------
    BitPattern
        The stored value, its sign, exponent and mantissa fields and its kind;
        ``.table()`` gives one row per bit (``position``, ``bit``, ``field``) for a chart,
        and :func:`trainium_lab.views.bit_formula` writes it out as a formula.

    References
    ----------
    IEEE 754-2019 (binary formats); OCP "8-bit Floating Point Specification (OFP8)" 2023
    (E4M3, E5M2).

    Examples
    --------
    >>> b = bit_fields(1.0, "bfloat16")
    >>> "".join(map(str, b.bits))
    '0011111110000000'
    >>> b.stored, b.exponent, b.kind
    (1.0, 0, 'normal')
    >>> t = b.table()
    >>> len(t), t.field[0], t.field[1], t.field[15]
    (16, 'sign', 'exponent', 'mantissa')
    """
    f = format_info(dtype)
    value = float(value) if isinstance(value, (int, float, np.floating)) else value
    if isinstance(value, bool) or not isinstance(value, float):
        raise ValueError(f"value must be a real number, got {value!r}")
    f32_max = float(np.finfo(np.float32).max)
    if math.isfinite(value) and abs(value) > f32_max:
        raise ValueError(f"value must be inf, nan or a float32 number (|value| <= {f32_max:.4g}), "
                         f"got {value!r}")
    stored = _nearest(np.array([value], np.float32), f.name)
    raw = int(stored.astype(_np_dtype(f.name)).view(_UINT[f.bits])[0])
    bits = tuple((raw >> (f.bits - 1 - i)) & 1 for i in range(f.bits))
    e_field = raw >> f.mantissa_bits & ((1 << f.exponent_bits) - 1)
    m_field = raw & ((1 << f.mantissa_bits) - 1)
    s = float(stored[0])
    if math.isnan(s):
        kind, exponent = "nan", None
    elif math.isinf(s):
        kind, exponent = "inf", None
    elif e_field == 0:
        kind, exponent = ("zero" if m_field == 0 else "subnormal"), f.min_exponent
    else:
        kind, exponent = "normal", e_field - f.bias
    return BitPattern(f.name, value, s, bits, bits[0], e_field, m_field, exponent, kind)


def spacing_table(dtype: Any) -> pd.DataFrame:
    """Spacing between neighbouring values, one row per binade (positive values).

    The first row is the subnormal range [min_subnormal, min_normal), where the
    spacing is constant; each further row is a binade [2^e, 2^(e+1)) with
    spacing 2^(e - mantissa_bits), capped at ``max_finite``.

    Columns: ``format``, ``label``, ``start``, ``end``, ``spacing``, ``relative``
    (spacing / start), ``n_values`` (representable values in the row).

    Examples
    --------
    >>> df = spacing_table("float8_e4m3fn")
    >>> len(df), int(df.n_values.sum())
    (16, 126)
    """
    f = format_info(dtype)
    rows = [{"start": f.min_subnormal, "end": f.min_normal, "spacing": f.min_subnormal,
             "n_values": 2 ** f.mantissa_bits - 1}]
    e = f.min_exponent
    while 2.0 ** e <= f.max_finite:
        start, spacing = 2.0 ** e, 2.0 ** (e - f.mantissa_bits)
        end = min(2.0 ** (e + 1), f.max_finite + spacing)
        rows.append({"start": start, "end": end, "spacing": spacing,
                     "n_values": int(round((end - start) / spacing))})
        e += 1
    df = pd.DataFrame(rows)
    df.insert(0, "label", f.label)
    df.insert(0, "format", f.name)
    df["relative"] = df.spacing / df.start
    return df


@dataclass(frozen=True)
class RoundingDraws:
    """One value rounded many times stochastically, beside round to nearest: :func:`rounding_draws`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per neighbour: ``result``, ``probability`` (stochastic rounding's chance of
        it), ``frequency`` (share of the draws), ``nearest`` (the round-to-nearest result).
    format : str
    value : float
        The input as float32.
    nearest : float
        Round to nearest.
    mean : float
        Mean of the draws (stochastic rounding's expectation is ``value``).
    n_draws : int
    """

    table: pd.DataFrame = field(repr=False)   # the repr stays one line; the table is a field
    format: str
    value: float
    nearest: float
    mean: float
    n_draws: int

    def _repr_markdown_(self) -> str:
        return (f"{self.value:.8g} in {format_info(self.format).label}: nearest **{self.nearest:.8g}**; "
                f"mean of {self.n_draws:,} stochastic roundings **{self.mean:.8g}**")


def rounding_draws(value: float, dtype: Any, n_draws: int = 1000, seed: int = 0) -> RoundingDraws:
    """Round one value many times stochastically; compare with the nearest rounding.

    Stochastic rounding picks the upper neighbour with probability (value − lower) / gap,
    so its expectation is the value itself.

    Parameters
    ----------
    value : float
        A finite number within the format's range.
    dtype : str
        The target format (a name of :data:`FORMATS` or an alias).
    n_draws : int
        Stochastic roundings to draw (1 to 10,000,000).
    seed : int
        Seeds the draws.

    Returns
    -------
    RoundingDraws
        ``table`` (one row per neighbour: ``result``, ``probability``, ``frequency``,
        ``nearest``), ``value`` (as float32), ``nearest``, ``mean`` of the draws, ``n_draws``.

    References
    ----------
    Gupta et al. 2015, arXiv:1502.02551 (stochastic rounding); AWS Neuron "Neuron Rounding
    Modes".

    Examples
    --------
    >>> r = rounding_draws(1.001, "bfloat16", 10_000, seed=1)
    >>> r.table.result.tolist(), r.table.probability.round(4).tolist(), r.nearest
    ([1.0, 1.0078125], [0.872, 0.128], 1.0)
    """
    f = format_info(dtype)
    n_draws = integer("n_draws", n_draws, minimum=1, maximum=10_000_000)
    seed = integer("seed", seed, minimum=0)
    lo, hi, p = neighbours(value, f.name)
    v = float(np.float32(value))
    draws = round_to(np.full(n_draws, v, np.float32), f.name, "stochastic", rng=seed)
    nearest = float(round_to([v], f.name)[0])
    results = [lo] if lo == hi else [lo, hi]
    probs = [1.0] if lo == hi else [1.0 - p, p]
    df = pd.DataFrame({"result": results, "probability": probs,
                       "frequency": [float(np.mean(draws == r)) for r in results],
                       "nearest": [r == nearest for r in results]})
    df = df.sort_values("result", ignore_index=True)
    return RoundingDraws(df, f.name, v, nearest, float(draws.mean(dtype=np.float64)), n_draws)


def repeated_updates(update: float = 1e-4, n_steps: int = 1000, dtype: Any = "bfloat16",
                     mode: str = "nearest", n_weights: int = 10_000, w0: float = 1.0,
                     seed: int = 0, record_every: int = 1) -> pd.DataFrame:
    """Add the same small update to many weights, rounding to ``dtype`` after each step.

    Each step computes ``w + update`` in float32 and rounds it with ``mode``, as a
    pure low-precision optimizer step would. The chapter's case is
    10,000 BF16 weights at 1.0 with 1e-4 added a thousand times.

    Returns
    -------
    pandas.DataFrame
        One row per recorded step (step 0, every ``record_every``-th step and the
        last one): ``step``, ``mean``, ``low`` and
        ``high`` (smallest and largest weight), ``exact`` (w0 + step · update in
        float64), ``mode``, ``format``.

    References
    ----------
    AWS Neuron "Neuron Rounding Modes" (small increments vanish under RNE);
    Gupta et al. 2015, arXiv:1502.02551.

    Examples
    --------
    >>> df = repeated_updates(1e-4, 1000, "bfloat16", "nearest")
    >>> float(df["mean"].iloc[-1])
    1.0
    >>> df = repeated_updates(1e-4, 1000, "bfloat16", "stochastic", seed=0)
    >>> round(float(df["mean"].iloc[-1]), 2)
    1.1
    """
    update = finite_number("update", update)
    n_steps = integer("n_steps", n_steps, minimum=0, maximum=100_000)
    name = _dtype_name(dtype)
    mode = choice("mode", mode, MODES)
    n_weights = integer("n_weights", n_weights, minimum=1, maximum=10_000_000)
    w0 = finite_number("w0", w0)
    seed = integer("seed", seed, minimum=0)
    record_every = integer("record_every", record_every, minimum=1)
    rng = np.random.default_rng(seed)
    w = _nearest(np.full(n_weights, w0, np.float32), name)
    u = np.float32(update)
    steps = np.array([k for k in range(n_steps + 1) if k % record_every == 0 or k == n_steps])
    stats = np.empty((len(steps), 3))
    stats[0] = w.mean(dtype=np.float64), w.min(), w.max()
    j = 1
    if name == "float32" or mode == "nearest":
        # Deterministic: every weight starts at w0 and takes the same steps, so one weight
        # stands for all (mean, min and max of equal values are that value), and once a
        # step leaves it unchanged (the update is below half a spacing) it never moves again.
        v = w[:1]
        for k in range(1, n_steps + 1):
            nxt = v + u if name == "float32" else _nearest(v + u, name)
            if nxt[0] == v[0] or (nxt[0] != nxt[0] and v[0] != v[0]):  # a fixed point
                stats[j:] = float(v[0])
                j = len(steps)
                break
            v = nxt
            if k == steps[j]:
                stats[j] = float(v[0])
                j += 1
        w = np.full(n_weights, v[0], np.float32)
        means, lows, highs = stats.T
        return pd.DataFrame({"step": steps, "mean": means, "low": lows, "high": highs,
                             "exact": w0 + steps * update, "mode": mode, "format": name})
    chunk = max(1, 2_000_000 // n_weights)  # draw the randomness for many steps at once
    draws = None
    for k in range(1, n_steps + 1):
        s = w + u
        i = (k - 1) % chunk
        if i == 0:
            draws = _draws(name, (min(chunk, n_steps - k + 1), n_weights), rng)
        w = _stochastic(s, name, draws[i])
        if k == steps[j]:
            stats[j] = w.mean(dtype=np.float64), w.min(), w.max()
            j += 1
    means, lows, highs = stats.T
    return pd.DataFrame({"step": steps, "mean": means, "low": lows, "high": highs,
                         "exact": w0 + steps * update, "mode": mode, "format": name})


#: the four ways of keeping weights in :func:`train_linear_regression`
VARIANTS: tuple[str, ...] = ("fp32", "nearest", "stochastic", "fp32 master")


def _variant_labels(name: str) -> dict[str, str]:
    lab = LABELS[name]
    return {"fp32": "FP32 weights", "nearest": f"{lab}, round to nearest",
            "stochastic": f"{lab}, stochastic rounding", "fp32 master": f"{lab} + FP32 master"}


def _regression_problem(n_features: int, n_samples: int, noise: float, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, n_features))
    w_true = rng.uniform(-3.0, 3.0, n_features)
    # Products are summed by numpy, not BLAS: OpenBLAS picks its kernels (and so its summation
    # order) per processor, and a last-bit difference can flip a rounding decision in training.
    y = (x * w_true).sum(axis=1) + noise * rng.standard_normal(n_samples)
    # The full-batch gradient of L(w) = mean((Xw - y)^2) / 2 is A w - b with
    # A = X'X / n and b = X'y / n, so a step costs O(d^2) whatever n is.
    a = (x[:, :, None] * x[:, None, :]).sum(axis=0) / n_samples
    b = (x * y[:, None]).sum(axis=0) / n_samples
    c = float((y * y).sum() / n_samples)
    return a, b, c, w_true


@dataclass(frozen=True)
class TrainingCurves:
    """Loss curves of the four ways of keeping weights: :func:`train_linear_regression`.

    Attributes
    ----------
    losses : pandas.DataFrame
        Tidy: ``step``, ``variant`` (one of :data:`VARIANTS`), ``label``, ``loss``.
    noise_floor : float
        The least-squares loss: the best any weights can do.
    learning_rate : float
    format : str
        The low-precision format of the three non-FP32 variants.
    """

    losses: pd.DataFrame = field(repr=False)
    noise_floor: float
    learning_rate: float
    format: str

    def final_losses(self) -> dict[str, float]:
        """Loss of each variant at the last recorded step."""
        last = self.losses[self.losses.step == self.losses.step.max()]
        return dict(zip(last.variant, last.loss.astype(float)))

    def _repr_markdown_(self) -> str:
        labels = _variant_labels(self.format)
        finals = ", ".join(f"{labels[v]} **{loss:.4f}**" for v, loss in self.final_losses().items())
        return (f"Loss after {int(self.losses.step.max()):,} steps at learning rate "
                f"{self.learning_rate:g}: {finals} (best possible {self.noise_floor:.4f})")


def train_linear_regression(learning_rate: float = 0.01, n_steps: int = 1000,
                            dtype: Any = "bfloat16", n_features: int = 8, n_samples: int = 256,
                            noise: float = 0.5, seed: int = 0,
                            record_every: int = 1) -> TrainingCurves:
    """Gradient descent on a seeded linear regression with four ways of storing weights.

    The data are ``y = X w* + noise · ε`` with ``X`` and ``ε`` standard normal and
    ``w*`` uniform in [-3, 3]; the loss is ``mean((X w - y)^2) / 2``; every step
    uses the full-batch gradient, computed in float32 from the weights the model
    uses. Weights are kept as

    * ``"fp32"``: float32 throughout;
    * ``"nearest"``: in ``dtype``, each update rounded to nearest;
    * ``"stochastic"``: in ``dtype``, each update rounded stochastically;
    * ``"fp32 master"``: a float32 master copy takes the update and the model
      uses its round-to-nearest copy in ``dtype`` (mixed precision).

    Parameters
    ----------
    learning_rate : float
        Step size (> 0, at most 1.5: larger steps diverge on this problem).
    n_steps : int
        Gradient steps (>= 0).
    dtype : str
        Low-precision format for the three non-FP32 variants.
    n_features, n_samples : int
        Problem size.
    noise : float
        Standard deviation of the label noise (>= 0).
    seed : int
        Seeds the data and the stochastic rounding.
    record_every : int
        Keep every k-th step (the last step is always kept).

    Returns
    -------
    TrainingCurves
        ``losses`` (tidy: ``step``, ``variant`` (one of :data:`VARIANTS`), ``label``,
        ``loss``) and ``noise_floor``, the least-squares loss (the best any weights can do).

    References
    ----------
    Micikevicius et al. 2018, arXiv:1710.03740 (FP32 master weights);
    Gupta et al. 2015, arXiv:1502.02551 (stochastic rounding in training).

    Examples
    --------
    >>> run = train_linear_regression(0.01, 1000)
    >>> last = run.losses[run.losses.step == 1000].set_index("variant").loss
    >>> bool(last["nearest"] > 2 * last["fp32"])
    True
    >>> bool(abs(last["stochastic"] / last["fp32"] - 1) < 0.05)
    True
    """
    lr = positive("learning_rate", learning_rate)
    if lr > 1.5:
        raise ValueError(f"learning_rate must be in (0, 1.5], got {learning_rate!r}")
    n_steps = integer("n_steps", n_steps, minimum=0, maximum=100_000)
    name = _dtype_name(dtype)
    n_features = integer("n_features", n_features, minimum=1, maximum=1000)
    n_samples = integer("n_samples", n_samples, minimum=n_features + 1, maximum=1_000_000)
    noise = positive("noise", noise, allow_zero=True)
    seed = integer("seed", seed, minimum=0)
    record_every = integer("record_every", record_every, minimum=1)
    a, b, c, _ = _regression_problem(n_features, n_samples, noise, seed)
    w_ls = np.linalg.solve(a, b)
    floor = 0.5 * float(w_ls @ a @ w_ls - 2 * b @ w_ls + c)
    a32, b32, lr32 = a.astype(np.float32), b.astype(np.float32), np.float32(lr)
    rng = np.random.default_rng(seed + 1)
    draws = _draws(name, (max(n_steps, 1), n_features), rng)

    low = None if name == "float32" else _np_dtype(name)
    f = None if name in ("float32", "bfloat16") else _format_info(name)
    if name == "bfloat16":
        draws = draws.astype(np.uint32)  # added to float32 bit patterns below

    # rows: fp32, nearest, stochastic, model copy of the master variant; row 4: the master
    # (kept in float32). One array, so that a step is a handful of NumPy calls (a widget
    # re-runs 1,000 steps on every change).
    w = np.zeros((5, n_features), np.float32)
    keep = np.array([k for k in range(n_steps + 1) if k % record_every == 0 or k == n_steps])
    kept = np.empty((len(keep), 4, n_features), np.float32)
    a3 = a32[None, :, :]
    j = 0
    # the formats' own overflow and NaN rules, once for the whole loop
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_steps + 1):
            if k == keep[j]:
                kept[j] = w[:4]
                j += 1
                if k == n_steps:
                    break
            g = (w[:4, :, None] * a3).sum(axis=1) - b32  # w A (A symmetric), no BLAS
            new = w[[0, 1, 2, 4]] - lr32 * g  # fp32, nearest, stochastic, master
            w[0] = new[0]
            w[4] = new[3]
            if low is None:
                w[1], w[2], w[3] = new[1], new[2], new[3]
                continue
            pair = new[[1, 3]].astype(low).astype(np.float32)  # round to nearest
            w[1], w[3] = pair[0], pair[1]
            if f is None:
                w[2] = _stochastic_bf16(new[2], draws[k])
            else:
                w[2] = _stochastic_generic(new[2], f, draws[k])
    wd = kept.astype(np.float64)
    losses = 0.5 * (np.einsum("kvi,ij,kvj->kv", wd, a, wd) - 2 * (wd * b).sum(axis=-1) + c)
    labels = _variant_labels(name)
    df = pd.DataFrame({"step": np.repeat(keep, 4), "variant": np.tile(VARIANTS, len(keep)),
                       "loss": losses.reshape(-1)})
    df.insert(2, "label", df.variant.map(labels))
    return TrainingCurves(df, floor, lr, name)


def bytes_per_param(master_weights: bool = True, optimizer: str = "adam", *,
                    grad_bytes_per_param: float = DEFAULT_GRAD_BYTES_PER_PARAM) -> float:
    """Training-state bytes per parameter with BF16 weights, with or without the FP32 master copy.

    The recipe is :func:`trainium_lab.sizing.bf16_recipe` (the package's one home of
    training-state recipes): BF16 weights (2) + gradients (``grad_bytes_per_param``: 2 for
    BF16, the course's convention; 4 for FP32, as Megatron-LM and DeepSpeed count) +
    optimizer state in FP32 (Adam's two moments: 8; SGD with momentum: 4; plain SGD: 0) +
    an FP32 master copy (4) if kept. With Adam and BF16 gradients: 16 with the master copy,
    12 without.

    References
    ----------
    Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054, §3.1: 2Ψ + 2Ψ + KΨ with K = 12
    (master weights 4, momentum 4, variance 4).

    Examples
    --------
    >>> bytes_per_param(True), bytes_per_param(False)
    (16.0, 12.0)
    >>> bytes_per_param(True, grad_bytes_per_param=4)
    18.0
    """
    r = bf16_recipe(master_weights, optimizer, grad_bytes_per_param=grad_bytes_per_param)
    return float(r.bytes_per_param)


@dataclass(frozen=True)
class MasterWeightsSaving:
    """Training state with and without an FP32 master copy, against one chip's HBM.

    Attributes
    ----------
    table : pandas.DataFrame
        Rows "with FP32 master" and "without (pure BF16)": ``setup``, ``bytes_per_param``,
        ``state_bytes``, ``state_gib``, ``chips`` (state / HBM of one chip, a fraction) and
        ``chips_needed`` (ceil; state only, no activations).
    saving_bytes : float
        State the master copy costs (4 bytes per parameter).
    hbm_bytes : float
        HBM of one chip.
    chip : str
        The chip's display name.
    """

    table: pd.DataFrame = field(repr=False)
    saving_bytes: float
    hbm_bytes: float
    chip: str

    @property
    def saving_gib(self) -> float:
        """The saving in GiB."""
        return self.saving_bytes / GiB

    @property
    def saving_chips(self) -> float:
        """The saving in chips' worth of HBM."""
        return self.saving_bytes / self.hbm_bytes

    def _repr_markdown_(self) -> str:
        return (f"Dropping the FP32 master copy saves **{format_bytes(self.saving_bytes)}** of state, "
                f"{self.saving_chips:.2f} {self.chip} HBMs")


def master_weights_saving(n_params: float = 70e9, chip: str = "trn2", optimizer: str = "adam", *,
                          grad_bytes_per_param: float = DEFAULT_GRAD_BYTES_PER_PARAM) -> MasterWeightsSaving:
    """Training state with and without an FP32 master copy, against one chip's HBM.

    ``grad_bytes_per_param`` as in :func:`bytes_per_param` (2 = BF16 gradients by default;
    the saving, 4 bytes per parameter, does not depend on it).

    Returns
    -------
    MasterWeightsSaving
        ``table`` (rows "with FP32 master" and "without (pure BF16)": ``setup``,
        ``bytes_per_param``, ``state_bytes``, ``state_gib``, ``chips``, ``chips_needed``),
        ``saving_bytes`` (and ``saving_gib``, ``saving_chips``), ``hbm_bytes``, ``chip``.

    References
    ----------
    Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054, §3.1; HBM per chip from ``data/``.

    Examples
    --------
    >>> m = master_weights_saving(70e9, "trn2")
    >>> m.table.chips_needed.tolist(), round(m.saving_gib, 1)
    ([11, 9], 260.8)
    """
    n_params = in_range("n_params", n_params, 0.0, 1e18, low_open=True)
    spec = specs.chip(chip)
    rows = []
    for label, mw in (("with FP32 master", True), ("without (pure BF16)", False)):
        bpp = bytes_per_param(mw, optimizer, grad_bytes_per_param=grad_bytes_per_param)
        state = n_params * bpp
        rows.append({"setup": label, "bytes_per_param": bpp, "state_bytes": state,
                     "state_gib": state / GiB, "chips": state / spec.hbm_bytes,
                     "chips_needed": math.ceil(state / spec.hbm_bytes)})
    df = pd.DataFrame(rows)
    saving = float(df.state_bytes[0] - df.state_bytes[1])
    return MasterWeightsSaving(df, saving, spec.hbm_bytes, spec.name)


def fp8_scale(amax: float, dtype: Any = "float8_e4m3fn", margin: int = 0) -> float:
    """Per-tensor scale that maps a tensor's largest magnitude onto the format's top.

    ``scale = max_finite / amax / 2**margin``; the tensor is stored as
    ``x · scale`` in FP8 and divided by ``scale`` when read back.

    References
    ----------
    Micikevicius et al. 2022, arXiv:2209.05433, §4 (per-tensor scaling factors).

    Examples
    --------
    >>> fp8_scale(0.01, "float8_e4m3fn")
    44800.0
    """
    amax = positive("amax", amax)
    margin = integer("margin", margin, minimum=0, maximum=64)
    return format_info(dtype).max_finite / amax / 2.0 ** margin


def quantization_error(x: Any, dtype: Any, scale: float = 1.0) -> dict[str, float]:
    """What storing ``x · scale`` in ``dtype`` (round to nearest) does to nonzero values.

    Returns a dict: ``underflow`` (share of nonzero values that became 0),
    ``overflow`` (share that became inf or NaN), ``rel_error`` (median relative
    error of the rest, after dividing by ``scale``).

    Examples
    --------
    >>> quantization_error([1e-4, 0.5, 1000.0], "float8_e4m3fn")["underflow"]
    0.3333333333333333
    """
    scale = positive("scale", scale)
    x32 = _as_float32(x)
    x32 = x32[x32 != 0]
    if x32.size == 0:
        raise ValueError("x must contain at least one nonzero value")
    q = round_to(x32 * np.float32(scale), dtype) / np.float32(scale)
    under = q == 0
    over = ~np.isfinite(q)
    ok = ~under & ~over
    rel = np.abs(q[ok] - x32[ok]) / np.abs(x32[ok])
    return {"underflow": float(under.mean()), "overflow": float(over.mean()),
            "rel_error": float(np.median(rel)) if rel.size else float("nan")}


def fp8_scaling_demo(center: float = 1e-4, spread: float = 2.0, n: int = 20_000,
                     seed: int = 0) -> pd.DataFrame:
    """Small gradient-like values stored in each FP8 format, with and without scaling.

    Values are ±exp(N(ln center, spread)); the scaled rows use :func:`fp8_scale`
    with the values' own maximum. Returns a tidy DataFrame: ``format``, ``label``,
    ``scaling`` ("none" or "per-tensor"), ``underflow``, ``overflow``,
    ``rel_error``.

    Examples
    --------
    >>> df = fp8_scaling_demo()
    >>> df.set_index(["format", "scaling"]).underflow.round(2).tolist()
    [0.87, 0.01, 0.09, 0.0]
    """
    center = positive("center", center)
    spread = positive("spread", spread)
    n = integer("n", n, minimum=1, maximum=10_000_000)
    rng = np.random.default_rng(integer("seed", seed, minimum=0))
    x = np.exp(rng.normal(math.log(center), spread, n)) * rng.choice([-1.0, 1.0], n)
    amax = float(np.max(np.abs(x)))
    rows = []
    for d in ("float8_e4m3fn", "float8_e5m2"):
        for scaling, s in (("none", 1.0), ("per-tensor", fp8_scale(amax, d))):
            rows.append({"format": d, "label": LABELS[d], "scaling": scaling,
                         **quantization_error(x, d, s)})
    return pd.DataFrame(rows)



# --------------------------------------------------------------------- block scaling (OCP MX)
#
# Appended for issue 15 (chapter 02's block-scaled formats). Element facts come from
# ``ml_dtypes.finfo`` through ``_format_info``, as for the formats above.

#: narrow formats used only as MX elements or scales (or shown beside cFP8), not in FORMATS
ELEMENT_FORMATS: tuple[str, ...] = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float8_e3m4")
LABELS.update({name: dtypes.label(name) for name in ELEMENT_FORMATS[2:]})
#: the OCP MX v1.0 concrete formats covered here -> their element dtype (ml_dtypes names), from
#: the one table of formats (:data:`trainium_lab.dtypes.NUMBER_FORMATS`)
MX_FORMATS: dict[str, str] = {f.name: f.element_type for f in dtypes.NUMBER_FORMATS.values()
                              if f.block_size}
MX_LABELS: dict[str, str] = {name: dtypes.label(name) for name in MX_FORMATS}
#: elements per block that share one scale (OCP MX v1.0, k = 32 for every concrete format)
MX_BLOCK_SIZE = dtypes.NUMBER_FORMATS["mxfp4"].block_size
#: the shared scale's format: 8 exponent bits, no sign, no mantissa (a power of two)
MX_SCALE_DTYPE = dtypes.NUMBER_FORMATS["mxfp4"].scale_type
#: how a block's scale exponent is chosen from its largest magnitude (see mx_scale_exponent)
MX_SCALE_RULES: tuple[str, ...] = ("floor", "ceil")


def _e8m0() -> tuple[np.dtype, int, int, int]:
    """E8M0's dtype, exponent bias, and smallest / largest finite exponents (from ml_dtypes)."""
    dt = np.dtype(ml_dtypes.float8_e8m0fnu)
    fi = ml_dtypes.finfo(dt)
    return dt, -int(fi.minexp), int(fi.minexp), int(fi.maxexp) - 1


def element_format_info(dtype: Any) -> FormatInfo:
    """Bits, range and precision of a format, including the narrow MX element formats.

    Accepts everything :func:`format_info` does plus ``"float4_e2m1fn"`` (MXFP4's
    element) and ``"float8_e3m4"`` (one of the cFP8 variants, as ``ml_dtypes`` defines
    it, with IEEE-style infinities).

    References
    ----------
    OCP Microscaling Formats (MX) Specification v1.0 (2023), §5.3 (FP8, FP6 and FP4 element
    types); ``ml_dtypes.finfo``.

    Examples
    --------
    >>> f = element_format_info("float4_e2m1fn")
    >>> f.bits, f.exponent_bits, f.mantissa_bits, f.max_finite, f.min_subnormal
    (4, 2, 1, 6.0, 0.5)
    >>> element_format_info("e4m3").max_finite
    448.0
    """
    return _format_info(dtypes.canonical(dtype, "dtype", allowed=FORMATS + ELEMENT_FORMATS[2:]))


def _mx_format(fmt: Any) -> str:
    return dtypes.canonical(fmt, "fmt", allowed=MX_FORMATS)


def _emax(info: FormatInfo) -> int:
    """Exponent of the element format's largest normal value (``emax_elem`` in the spec)."""
    return int(np.frexp(info.max_finite)[1]) - 1


def _mx_exponents(amax: np.ndarray, info: FormatInfo, rule: str) -> np.ndarray:
    """Scale exponents for blocks with largest magnitudes ``amax`` (float64, >= 0, finite)."""
    _, _, lo, hi = _e8m0()
    floor_log2 = np.frexp(amax)[1].astype(np.int64) - 1  # exact: amax = m * 2**e, m in [0.5, 1)
    e = floor_log2 - _emax(info)
    if rule == "ceil":  # smallest power of two that keeps the block maximum unclamped
        e = e + (amax > np.ldexp(info.max_finite, e))
    e = np.where(amax > 0, e, lo)  # an all-zero block: the spec gives no rule; use the smallest
    return np.clip(e, lo, hi)


def mx_scale_exponent(amax: float, fmt: str = "mxfp8_e4m3", rule: str = "floor") -> int:
    """The shared scale exponent of one MX block: ``X = 2**exponent``.

    ``"floor"`` is the OCP MX v1.0 rule: ``floor(log2(amax)) - emax_elem``, where
    ``emax_elem`` is the exponent of the element format's largest normal value (8 for
    E4M3, 15 for E5M2, 2 for E2M1). It puts the block's largest value in the element
    format's top binade ``[2**emax, 2**(emax+1))``; where that binade ends above the
    largest finite element (E4M3 stops at 448 < 512, E2M1 at 6 < 8) the top values are
    clamped. ``"ceil"`` is the round-up variant of Mishra et al. (2025): the smallest
    power of two with ``amax / X <= max_finite``, so nothing clamps. The exponent is
    kept inside E8M0's range, −127 … 127; an all-zero block gets −127.

    Parameters
    ----------
    amax : float
        The block's largest magnitude (finite, >= 0).
    fmt : str
        One of :data:`MX_FORMATS`.
    rule : {"floor", "ceil"}

    Returns
    -------
    int

    References
    ----------
    OCP Microscaling Formats (MX) Specification v1.0 (2023), §6.3; B. Darvish Rouhani et al.,
    "Microscaling Data Formats for Deep Learning", arXiv:2310.10537 (2023), Algorithm 1;
    A. Mishra, D. Stosic, S. Layton, "Recipes for Pre-training LLMs with MXFP8",
    arXiv:2506.08027 (2025) (scale exponent rounded up).

    Examples
    --------
    >>> mx_scale_exponent(3.1, "mxfp4")       # floor(log2 3.1) = 1, minus emax 2
    -1
    >>> mx_scale_exponent(500.0, "mxfp8_e4m3"), mx_scale_exponent(500.0, "mxfp8_e4m3", "ceil")
    (0, 1)
    """
    amax = positive("amax", amax, allow_zero=True)
    info = element_format_info(MX_FORMATS[_mx_format(fmt)])
    rule = choice("rule", rule, MX_SCALE_RULES)
    return int(_mx_exponents(np.array([amax], np.float64), info, rule)[0])


@dataclass(frozen=True, eq=False)
class MXTensor:
    """A vector stored in an MX format: one E8M0 scale per block, one element per value.

    The stored bits are the fields: ``scale_codes`` (E8M0 bit patterns, one per block)
    and ``element_codes`` (the element format's bit patterns, one byte each as
    ``ml_dtypes`` keeps them). Everything else is decoded from those bits with
    ``ml_dtypes``, so ``values`` is exactly what the format holds.
    """

    fmt: str
    rule: str
    block_size: int
    n_values: int
    scale_codes: np.ndarray
    element_codes: np.ndarray
    n_clamped: int

    @property
    def element_dtype(self) -> str:
        """The element format (ml_dtypes name)."""
        return MX_FORMATS[self.fmt]

    @property
    def n_blocks(self) -> int:
        """Number of blocks (the last one is padded with zeros if the length is not a multiple)."""
        return len(self.scale_codes)

    @property
    def scale_exponents(self) -> np.ndarray:
        """Each block's scale exponent (the stored E8M0 code minus the bias 127)."""
        return self.scale_codes.astype(np.int64) - _e8m0()[1]

    @property
    def scales(self) -> np.ndarray:
        """Each block's scale, decoded from its E8M0 bits by ``ml_dtypes`` (float64)."""
        return self.scale_codes.view(_e8m0()[0]).astype(np.float64)

    @property
    def elements(self) -> np.ndarray:
        """The stored elements, decoded by ``ml_dtypes``: shape (n_blocks, block_size), float32."""
        dt = _np_dtype(self.element_dtype)
        return self.element_codes.view(dt).astype(np.float32).reshape(self.n_blocks, self.block_size)

    @property
    def values(self) -> np.ndarray:
        """The represented values, element × scale (exact in float32), original length."""
        out = self.elements.astype(np.float64) * self.scales[:, None]
        return out.reshape(-1)[: self.n_values].astype(np.float32)

    @property
    def bits_per_value(self) -> float:
        """Storage per value: element bits plus the block's 8 scale bits shared out."""
        bits = element_format_info(self.element_dtype).bits
        return (bits * self.n_values + 8 * self.n_blocks) / self.n_values

    def _repr_markdown_(self) -> str:
        e = self.scale_exponents
        return (f"**{MX_LABELS[self.fmt]}** ({self.rule} rule): {self.n_values:,} values in "
                f"{self.n_blocks:,} blocks of {self.block_size}, {self.bits_per_value:.3g} bits per "
                f"value; scale exponents {int(e.min())} … {int(e.max())}; "
                f"{self.n_clamped:,} values clamped")


def _finite_vector(x: Any) -> np.ndarray:
    x32 = _as_float32(x).reshape(-1)
    if x32.size == 0:
        raise ValueError("x must contain at least one value")
    if x32.size > 50_000_000:
        raise ValueError(f"x must have at most 50,000,000 values, got {x32.size:,}")
    if not np.all(np.isfinite(x32)):
        raise ValueError("x must be finite (within the float32 range): a block holding inf or NaN "
                         "has no MX scale (the spec makes it NaN)")
    return x32


def mx_quantize(x: Any, fmt: str = "mxfp8_e4m3", block_size: int = MX_BLOCK_SIZE,
                rule: str = "floor") -> MXTensor:
    """Store a vector in an MX format, exactly as the OCP MX v1.0 conversion does.

    The values (flattened, converted to float32) are cut into blocks of
    ``block_size``. For each block: the scale exponent from its largest magnitude
    (:func:`mx_scale_exponent`), ``X = 2**exponent``; each element is ``V_i / X``
    (exact: a power of two), clamped to ± the element format's largest finite value
    ("clamping normal numbers", the spec's conversion) and rounded to nearest, ties to
    even, by the ``ml_dtypes`` cast. A last, short block is padded with zeros (which
    does not change its maximum).

    Parameters
    ----------
    x : array_like
        Finite real values.
    fmt : str
        ``"mxfp8_e4m3"``, ``"mxfp8_e5m2"`` or ``"mxfp4"`` (:data:`MX_FORMATS`).
    block_size : int
        Values per shared scale; the spec's is 32 (:data:`MX_BLOCK_SIZE`). Others are for
        exploring the trade-off only.
    rule : {"floor", "ceil"}
        How the scale exponent is chosen (:func:`mx_scale_exponent`).

    Returns
    -------
    MXTensor

    References
    ----------
    OCP Microscaling Formats (MX) Specification v1.0 (2023), §5 (block of k = 32, E8M0
    scale) and §6.3 (conversion); Rouhani et al. (2023), arXiv:2310.10537, Algorithm 1.

    Examples
    --------
    A hand-worked MXFP4 block: the largest magnitude 3.1 gives X = 2**-1; 3.1 / X = 6.2
    clamps to 6 (stored 3.0), 0.2 / X = 0.4 rounds to 0.5 (stored 0.25):

    >>> t = mx_quantize([3.1, 0.2, -1.0, 0.0], "mxfp4")
    >>> t.scale_exponents.tolist(), t.values.tolist(), t.n_clamped
    ([-1], [3.0, 0.25, -1.0, 0.0], 1)
    >>> t.elements[0, :4].tolist(), int(t.scale_codes[0])
    ([6.0, 0.5, -2.0, 0.0], 126)
    >>> mx_quantize(range(64), "mxfp8_e4m3").bits_per_value
    8.25
    """
    fmt = _mx_format(fmt)
    block_size = integer("block_size", block_size, minimum=1, maximum=1 << 20)
    rule = choice("rule", rule, MX_SCALE_RULES)
    x32 = _finite_vector(x)
    info = element_format_info(MX_FORMATS[fmt])
    n = x32.size
    n_blocks = -(-n // block_size)
    blocks = np.zeros(n_blocks * block_size, np.float64)
    blocks[:n] = x32
    blocks = blocks.reshape(n_blocks, block_size)
    exps = _mx_exponents(np.abs(blocks).max(axis=1), info, rule)
    v = blocks / np.ldexp(1.0, exps)[:, None]  # exact, and exactly a float32 (see below)
    top = info.max_finite
    clamped = int(np.count_nonzero(np.abs(v) > top))
    # |v| < 2**(emax + 1), and v is a float32 times a power of two: casting to float32 first
    # is exact, so the element cast rounds once (the ml_dtypes float32 cast, RNE).
    v32 = np.clip(v, -top, top).astype(np.float32)
    codes = v32.astype(_np_dtype(info.name)).view(np.uint8)
    scale_codes = (exps + _e8m0()[1]).astype(np.uint8)
    codes.flags.writeable = False
    scale_codes.flags.writeable = False
    return MXTensor(fmt=fmt, rule=rule, block_size=block_size, n_values=n,
                    scale_codes=scale_codes, element_codes=codes.reshape(-1), n_clamped=clamped)


def mx_block_table(x: Any, fmt: str = "mxfp4", rule: str = "floor") -> pd.DataFrame:
    """One block (the first ``MX_BLOCK_SIZE`` values of ``x``) stored in an MX format, value by value.

    Returns
    -------
    pandas.DataFrame
        One row per value: ``index``, ``value`` (the input, as float32), ``scaled``
        (``value / X``), ``element`` (the stored element), ``stored`` (element × X),
        ``clamped`` (True where ``|value / X|`` exceeded the element format's top),
        ``scale_exponent`` (the block's, on every row) and ``rel_error``
        (``|stored − value| / |value|``, NaN for zeros).

    Examples
    --------
    >>> df = mx_block_table([3.1, 0.2, -1.0, 0.0], "mxfp4")
    >>> df.scaled.round(3).tolist(), df.element.tolist(), df.stored.tolist(), df.clamped.tolist()
    ([6.2, 0.4, -2.0, 0.0], [6.0, 0.5, -2.0, 0.0], [3.0, 0.25, -1.0, 0.0], [True, False, False, False])
    """
    x32 = _finite_vector(x)[:MX_BLOCK_SIZE]
    t = mx_quantize(x32, fmt, MX_BLOCK_SIZE, rule)
    scale = float(t.scales[0])
    scaled = x32.astype(np.float64) / scale
    stored = t.values.astype(np.float64)
    top = element_format_info(t.element_dtype).max_finite
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(x32 != 0, np.abs(stored - x32) / np.abs(x32.astype(np.float64)), np.nan)
    return pd.DataFrame({"index": np.arange(x32.size), "value": x32.astype(np.float64),
                         "scaled": scaled, "element": t.elements[0, :x32.size].astype(np.float64),
                         "stored": stored, "clamped": np.abs(scaled) > top,
                         "scale_exponent": int(t.scale_exponents[0]), "rel_error": rel})


def heavy_tailed_tensor(n: int = 65_536, df: float = 1.0, seed: int = 0) -> np.ndarray:
    """A seeded float32 vector with heavy tails: Student's t with ``df`` degrees of freedom.

    ``df = 1`` is the Cauchy distribution: most values near ±1, a few thousands of times
    larger, the way a tensor with outliers looks to a number format; larger ``df`` is
    lighter-tailed (towards a normal distribution).

    References
    ----------
    T. Dettmers et al., "LLM.int8(): 8-bit Matrix Multiplication for Transformers at
    Scale", arXiv:2208.07339 (2022) (outliers in activations).

    Examples
    --------
    >>> x = heavy_tailed_tensor(65_536, 1.0, seed=0)
    >>> x.dtype.name, round(float(np.median(np.abs(x))), 2), float(np.abs(x).max()) > 1e4
    ('float32', 1.0, True)
    """
    n = integer("n", n, minimum=1, maximum=10_000_000)
    df = in_range("df", df, 0.0, 1e6, low_open=True)
    seed = integer("seed", seed, minimum=0)
    return np.random.default_rng(seed).standard_t(df, n).astype(np.float32)


#: scheme name -> (kind, element dtype or MX format, scale rule) for block_scaling_comparison
BLOCK_SCHEMES: dict[str, tuple[str, str, str | None]] = {
    "per-tensor FP8 E4M3": ("tensor", "float8_e4m3fn", None),
    "MXFP8 E4M3": ("mx", "mxfp8_e4m3", "floor"),
    "MXFP8 E4M3, scale rounded up": ("mx", "mxfp8_e4m3", "ceil"),
    "per-tensor FP8 E5M2": ("tensor", "float8_e5m2", None),
    "MXFP8 E5M2": ("mx", "mxfp8_e5m2", "floor"),
    "MXFP8 E5M2, scale rounded up": ("mx", "mxfp8_e5m2", "ceil"),
    "per-tensor FP4 E2M1": ("tensor", "float4_e2m1fn", None),
    "MXFP4": ("mx", "mxfp4", "floor"),
    "MXFP4, scale rounded up": ("mx", "mxfp4", "ceil"),
}


def _scheme_quantize(x32: np.ndarray, scheme: str, block_size: int) -> tuple[np.ndarray, float, int]:
    """(stored values, bits per value, values clamped) for one scheme of BLOCK_SCHEMES."""
    kind, what, rule = BLOCK_SCHEMES[scheme]
    if kind == "mx":
        t = mx_quantize(x32, what, block_size, rule)
        return t.values, t.bits_per_value, t.n_clamped
    info = element_format_info(what)
    amax = float(np.max(np.abs(x32)))
    # fp8_scale's rule (max_finite / amax), held in FP32, for any element format
    scale = np.float32(info.max_finite / amax) if amax > 0 else np.float32(1.0)
    top = np.float32(info.max_finite)
    with np.errstate(over="ignore"):
        scaled = x32 * scale
    clamped = int(np.count_nonzero(np.abs(scaled) > top))
    q = np.clip(scaled, -top, top).astype(_np_dtype(info.name)).astype(np.float32) / scale
    return q, info.bits + 32 / x32.size, clamped


def _schemes(schemes) -> list[str]:
    return sequence("schemes", schemes, lambda name, s: choice(name, s, tuple(BLOCK_SCHEMES)))


def block_scaling_comparison(x: Any, schemes: tuple[str, ...] = tuple(BLOCK_SCHEMES),
                             block_size: int = MX_BLOCK_SIZE) -> pd.DataFrame:
    """Per-tensor against block (MX) scaling: what each scheme does to the same values.

    Per-tensor schemes scale the whole vector by ``max_finite / amax`` (held in FP32,
    :func:`fp8_scale`'s rule) and round to nearest; MX schemes use :func:`mx_quantize`.
    Errors are relative, per nonzero value, so a tensor's many small values count as
    much as its few large ones.

    Returns
    -------
    pandas.DataFrame
        One row per scheme: ``scheme``, ``kind`` ("tensor" or "mx"), ``bits_per_value``,
        ``median_rel_error`` and ``p99_rel_error`` (of ``|stored − x| / |x|``),
        ``underflow`` (share of nonzero values stored as 0) and ``clamped`` (share
        clamped to the element format's largest value).

    References
    ----------
    Micikevicius et al. (2022), arXiv:2209.05433, §4 (per-tensor scaling); OCP MX v1.0
    (2023) §6.3; Rouhani et al. (2023), arXiv:2310.10537.

    Examples
    --------
    >>> x = heavy_tailed_tensor(65_536, 1.0, seed=0)
    >>> t = block_scaling_comparison(x, ("per-tensor FP8 E4M3", "MXFP8 E4M3")).set_index("scheme")
    >>> bool(t.p99_rel_error["MXFP8 E4M3"] < t.p99_rel_error["per-tensor FP8 E4M3"])
    True
    """
    x32 = _finite_vector(x)
    names = _schemes(schemes)
    block_size = integer("block_size", block_size, minimum=1, maximum=1 << 20)
    nz = x32 != 0
    if not nz.any():
        raise ValueError("x must contain at least one nonzero value")
    xs = np.abs(x32[nz]).astype(np.float64)
    rows = []
    for name in names:
        q, bits, clamped = _scheme_quantize(x32, name, block_size)
        rel = np.abs(q[nz].astype(np.float64) - x32[nz]) / xs
        rows.append({"scheme": name, "kind": BLOCK_SCHEMES[name][0], "bits_per_value": bits,
                     "median_rel_error": float(np.median(rel)),
                     "p99_rel_error": float(np.quantile(rel, 0.99)),
                     "underflow": float(np.mean(q[nz] == 0)), "clamped": clamped / x32.size})
    return pd.DataFrame(rows)


def error_by_magnitude(x: Any, schemes: tuple[str, ...] = ("per-tensor FP8 E4M3", "MXFP8 E4M3"),
                       block_size: int = MX_BLOCK_SIZE, min_count: int = 20) -> pd.DataFrame:
    """Median relative error of each scheme for the values in each power-of-two range.

    Values are grouped by binade, ``2**e <= |x| < 2**(e+1)`` (found exactly with
    ``frexp``); binades with fewer than ``min_count`` values are dropped. A value stored
    as 0 has relative error 1.

    Returns
    -------
    pandas.DataFrame
        Tidy: ``scheme``, ``magnitude`` (``2**e``, the binade's lower edge), ``n_values``,
        ``median_rel_error``.

    Examples
    --------
    >>> x = heavy_tailed_tensor(65_536, 1.0, seed=0)
    >>> df = error_by_magnitude(x).pivot(index="magnitude", columns="scheme", values="median_rel_error")
    >>> float(df.loc[2.0 ** -8, "per-tensor FP8 E4M3"]), bool(df.loc[2.0 ** -8, "MXFP8 E4M3"] < 0.1)
    (1.0, True)
    """
    x32 = _finite_vector(x)
    names = _schemes(schemes)
    block_size = integer("block_size", block_size, minimum=1, maximum=1 << 20)
    min_count = integer("min_count", min_count, minimum=1)
    nz = x32 != 0
    if not nz.any():
        raise ValueError("x must contain at least one nonzero value")
    binade = np.frexp(np.abs(x32[nz]))[1].astype(np.int64) - 1
    xs = np.abs(x32[nz]).astype(np.float64)
    order = np.argsort(binade, kind="stable")
    edges, start, count = np.unique(binade[order], return_index=True, return_counts=True)
    keep = np.flatnonzero(count >= min_count)
    cols: dict[str, list] = {"scheme": [], "magnitude": [], "n_values": [], "median_rel_error": []}
    for name in names:
        q, _, _ = _scheme_quantize(x32, name, block_size)
        rel = (np.abs(q[nz].astype(np.float64) - x32[nz]) / xs)[order]
        cols["scheme"] += [name] * len(keep)
        cols["magnitude"].append(np.ldexp(1.0, edges[keep]))
        cols["n_values"].append(count[keep])
        cols["median_rel_error"].append(np.array([np.median(rel[start[i]:start[i] + count[i]])
                                                  for i in keep]))
    return pd.DataFrame({"scheme": cols["scheme"],
                         "magnitude": np.concatenate(cols["magnitude"]),
                         "n_values": np.concatenate(cols["n_values"]),
                         "median_rel_error": np.concatenate(cols["median_rel_error"])})


__all__ += ["ELEMENT_FORMATS", "MX_FORMATS", "MX_LABELS", "MX_BLOCK_SIZE", "MX_SCALE_DTYPE",
            "MX_SCALE_RULES", "BLOCK_SCHEMES", "MXTensor", "element_format_info",
            "mx_scale_exponent", "mx_quantize", "mx_block_table", "heavy_tailed_tensor",
            "block_scaling_comparison", "error_by_magnitude"]
