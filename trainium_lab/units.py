"""Units as plain floats in base units, and formatting for printouts.

Inside the package every quantity is a float in base units: seconds, bytes,
FLOPs (a count), FLOP/s, bytes/s. Multiply going in, divide going out::

    >>> from trainium_lab.units import GiB, GB, ms
    >>> 96 * GiB / GB
    103.079215104
    >>> 0.25 * ms
    0.00025

Decimal (GB = 10**9 bytes) and binary (GiB = 2**30 bytes) prefixes sit side by
side because vendors mix them; this course never does.

References
----------
IEC 80000-13 (binary prefixes); the idea follows scikit-hep/hepunits.
"""

from __future__ import annotations

import math

from trainium_lab._validate import finite_number, integer

__all__ = [
    "KB", "MB", "GB", "TB", "PB",
    "KiB", "MiB", "GiB", "TiB",
    "ns", "us", "ms", "s", "minute", "hour", "day",
    "TFLOPS", "PFLOPS", "Gbps",
    "format_bytes", "format_seconds", "format_flops", "format_flop_rate",
    "format_bandwidth",
]

# bytes, decimal
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
# bytes, binary
KiB = float(2**10)
MiB = float(2**20)
GiB = float(2**30)
TiB = float(2**40)
# seconds
ns = 1e-9
us = 1e-6
ms = 1e-3
s = 1.0
minute = 60.0
hour = 3600.0
day = 86400.0
# rates
TFLOPS = 1e12  # FLOP/s
PFLOPS = 1e15  # FLOP/s
Gbps = 1e9 / 8  # bytes/s in one gigabit per second

_DECIMAL = (("PB", PB), ("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB))
_BINARY = (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB))


def format_bytes(n_bytes: float, *, binary: bool = True, digits: int = 1) -> str:
    """Format a byte count with a binary (GiB) or decimal (GB) prefix.

    Parameters
    ----------
    n_bytes : float
        Size in bytes.
    binary : bool
        ``True`` for KiB/MiB/GiB/TiB (powers of 2), ``False`` for KB/MB/GB/TB/PB.
    digits : int
        Digits after the decimal point.

    Examples
    --------
    >>> format_bytes(96 * GiB)
    '96.0 GiB'
    >>> format_bytes(96 * GiB, binary=False)
    '103.1 GB'
    >>> format_bytes(512)
    '512 B'
    """
    n_bytes = finite_number("n_bytes", n_bytes)
    digits = integer("digits", digits, minimum=0, maximum=15)
    for name, size in (_BINARY if binary else _DECIMAL):
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:.{digits}f} {name}"
    return f"{n_bytes:.0f} B"


def format_seconds(seconds: float, *, digits: int = 3) -> str:
    """Format a duration with the unit that keeps the number readable.

    Parameters
    ----------
    seconds : float
        Duration in seconds.
    digits : int
        Significant digits.

    Examples
    --------
    >>> format_seconds(0.00024576)
    '246 µs'
    >>> format_seconds(3942.0)
    '65.7 min'
    >>> format_seconds(130 * 86400.0)
    '130 days'
    """
    seconds = finite_number("seconds", seconds)
    digits = integer("digits", digits, minimum=1, maximum=15)
    mag = abs(seconds)
    if mag == 0:
        return "0 s"
    for name, size, limit in (
        ("days", day, 2 * day), ("h", hour, 2 * hour), ("min", minute, 2 * minute),
        ("s", 1.0, 1.0), ("ms", ms, ms), ("µs", us, us), ("ns", ns, 0.0),
    ):
        if mag >= limit:
            return f"{_sig(seconds / size, digits)} {name}"
    return f"{_sig(seconds / ns, digits)} ns"


def _sig(x: float, digits: int) -> str:
    """Round to ``digits`` significant figures without scientific notation."""
    if x == 0:
        return "0"
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
    return f"{x:,.{decimals}f}"


def format_flops(flops: float, *, digits: int = 3) -> str:
    """Format a FLOP count (an amount of work, not a rate) in scientific notation.

    Examples
    --------
    >>> format_flops(4.8e22)
    '4.80e+22 FLOPs'
    """
    flops = finite_number("flops", flops)
    digits = integer("digits", digits, minimum=1, maximum=15)
    return f"{flops:.{digits - 1}e} FLOPs"


def format_flop_rate(flop_per_s: float, *, digits: int = 3) -> str:
    """Format a rate in FLOP/s with a decimal prefix (TFLOP/s, PFLOP/s).

    Examples
    --------
    >>> format_flop_rate(667e12)
    '667 TFLOP/s'
    >>> format_flop_rate(16 * 667e12)
    '10.7 PFLOP/s'
    """
    flop_per_s = finite_number("flop_per_s", flop_per_s)
    digits = integer("digits", digits, minimum=1, maximum=15)
    for name, size in (("EFLOP/s", 1e18), ("PFLOP/s", 1e15), ("TFLOP/s", 1e12),
                       ("GFLOP/s", 1e9)):
        if abs(flop_per_s) >= size:
            return f"{_sig(flop_per_s / size, digits)} {name}"
    return f"{_sig(flop_per_s, digits)} FLOP/s"


def format_bandwidth(bytes_per_s: float, *, digits: int = 3) -> str:
    """Format a bandwidth in decimal bytes per second (GB/s, TB/s).

    Examples
    --------
    >>> format_bandwidth(1024e9)
    '1.02 TB/s'
    >>> format_bandwidth(200 * Gbps)
    '25.0 GB/s'
    """
    bytes_per_s = finite_number("bytes_per_s", bytes_per_s)
    digits = integer("digits", digits, minimum=1, maximum=15)
    for name, size in (("TB/s", TB), ("GB/s", GB), ("MB/s", MB)):
        if abs(bytes_per_s) >= size:
            return f"{_sig(bytes_per_s / size, digits)} {name}"
    return f"{_sig(bytes_per_s, digits)} B/s"
