"""Chapter 02's views: a stored bit pattern written out as a formula."""

from __future__ import annotations

from trainium_lab import numerics
from trainium_lab._validate import instance

__all__ = ["bit_formula"]


def bit_formula(pattern) -> str:
    """The value a bit pattern holds, written out: ``(-1)^s × 2^(e - bias) × 1.m₂ = value``.

    Parameters
    ----------
    pattern : trainium_lab.numerics.BitPattern
        From :func:`trainium_lab.numerics.bit_fields`.

    Examples
    --------
    >>> bit_formula(numerics.bit_fields(1.0, "bfloat16"))
    '(-1)^0 × 2^(127 - 127) × 1.0000000₂ = 1'
    >>> bit_formula(numerics.bit_fields(float("inf"), "float16"))
    '+inf'
    """
    b = instance("pattern", pattern, numerics.BitPattern, "a BitPattern from numerics.bit_fields")
    f = numerics.format_info(b.format)
    if b.kind == "nan":
        return "NaN"
    if b.kind == "inf":
        return f"{'-' if b.sign else '+'}inf"
    if b.kind in ("zero", "subnormal"):
        return f"(-1)^{b.sign} × 2^{b.exponent} × 0.{b.mantissa:0{f.mantissa_bits}b}₂ = {b.stored:.8g}"
    return (f"(-1)^{b.sign} × 2^({b.exponent_field} - {f.bias}) × 1.{b.mantissa:0{f.mantissa_bits}b}₂"
            f" = {b.stored:.8g}")
