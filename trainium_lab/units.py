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
import re

from trainium_lab._validate import finite_number, integer, positive

__all__ = [
    "KB", "MB", "GB", "TB", "PB",
    "KiB", "MiB", "GiB", "TiB", "PiB",
    "ns", "us", "ms", "s", "minute", "hour", "day",
    "TFLOPS", "PFLOPS", "Gbps", "GHz",
    "format_bytes", "format_seconds", "format_count", "format_flops", "format_flop_rate",
    "format_bandwidth", "parse_bytes", "parse_rate", "parse_seconds", "parse_count",
    "parse_fraction", "parse_usd_per_hour", "field_unit", "parse_in_unit", "data_unit",
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
PiB = float(2**50)
# seconds
ns = 1e-9
us = 1e-6
ms = 1e-3
s = 1.0
minute = 60.0
hour = 3600.0
day = 86400.0
# rates and frequencies
TFLOPS = 1e12  # FLOP/s
PFLOPS = 1e15  # FLOP/s
Gbps = 1e9 / 8  # bytes/s in one gigabit per second
GHz = 1e9  # cycles per second

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


def format_count(count: float, *, digits: int = 3) -> str:
    """Format a count (parameters, tokens) with the suffixes K, M, B (10^9), T (10^12).

    Examples
    --------
    >>> format_count(70e9), format_count(15.6e12), format_count(8_030_261_248), format_count(512)
    ('70B', '15.6T', '8.03B', '512')
    """
    count = finite_number("count", count)
    digits = integer("digits", digits, minimum=1, maximum=15)
    for name, size in (("P", 1e15), ("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(count) >= size:
            return f"{count / size:,.{digits}g}{name}"
    return f"{count:,.{digits}g}"


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


# --------------------------------------------------------------------------- parsing

#: a number, with optional thousands separators as the course prints them (``1,000``, ``26,421``)
_NUMBER = r"([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"

#: decimal prefixes (SI; ``K`` is accepted beside ``k`` because vendors write ``KB``) and binary ones
_PREFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "g": 1e9, "T": 1e12, "t": 1e12,
             "P": 1e15, "E": 1e18,
             "Ki": KiB, "Mi": MiB, "Gi": GiB, "Ti": TiB, "Pi": PiB}
#: lower-case prefixes that are SI prefixes of something else
_WRONG_PREFIX = {"m": "milli (10^-3); write M for mega", "p": "pico (10^-12); write P for peta",
                 "ki": "", "mi": "", "gi": "", "ti": "", "pi": ""}
_RATE_SUFFIXES = ("/s", "/sec", "/second", "ps", "PS", "Ps", "per s", "per second", "/S")
_BYTE_WORDS = ("byte", "bytes", "Byte", "Bytes", "BYTE", "BYTES")
_BIT_WORDS = ("bit", "bits", "Bit", "Bits", "BIT", "BITS")
_UNIT_RE = re.compile(r"(?P<prefix>[A-Za-z]?i?)(?P<base>bytes?|bits?|Bytes?|Bits?|BYTES?|BITS?|B|b)"
                      r"(?P<rate>/s|/sec|/second|ps|PS|Ps|/S)?")
_DATA_HINT = ("B is a byte and b a bit: write e.g. GB, GiB, Gb or Gbit (sizes), GB/s, GBps, GiB/s, "
              "Gbps or Gbit/s (rates)")


def data_unit(unit: str, name: str = "unit") -> tuple[float, bool] | None:
    """``(bytes per unit, is_rate)`` of a size or rate unit, read case-sensitively.

    ``B`` (or ``byte``) is a byte and ``b`` (or ``bit``) a bit whatever surrounds them: ``GB``,
    ``GBps``, ``GB/s`` are bytes, ``Gb``, ``Gbps``, ``Gbit/s`` bits (an eighth of a byte). Decimal
    prefixes (k/K, M, G, T, P) are powers of 10, binary ones (Ki, Mi, Gi, Ti, Pi) powers of 2.
    A rate ends in ``/s`` or ``ps``. Returns ``None`` for text that is not a data unit at all
    (``GHz``, ``h``); raises ``ValueError`` naming ``name`` for a unit that reads two ways.

    Parameters
    ----------
    unit : str
        The unit as typed, without the number (``"GB/s"``).
    name : str
        The field or flag, named in the message.

    Raises
    ------
    ValueError
        An all-lower-case unit with a prefix (``gb``, ``gbps``, ``kb``: gigabytes or gigabits?),
        or a prefix that is another SI prefix (``mB``: millibytes).

    Examples
    --------
    >>> data_unit("GBps"), data_unit("Gbps"), data_unit("GiB/s"), data_unit("25")
    ((1000000000.0, True), (125000000.0, True), (1073741824.0, True), None)
    >>> data_unit("Gbit/s"), data_unit("GB")
    ((125000000.0, True), (1000000000.0, False))
    """
    if not isinstance(unit, str):
        raise ValueError(f"{name}: a unit is text such as 'GB/s' or 'GiB'; got {unit!r}")
    compact = unit.replace(" ", "")
    for long, short in (("persecond", "/s"), ("pers", "/s")):
        if compact.endswith(long):
            compact = compact[: -len(long)] + short
    m = _UNIT_RE.fullmatch(compact)
    if not m:
        return None
    prefix, base, rate = m.group("prefix"), m.group("base"), bool(m.group("rate"))
    is_byte = base == "B" or base in _BYTE_WORDS
    letters = re.sub(r"[^A-Za-z]", "", compact)
    if base == "b" and prefix and letters == letters.lower():
        kind = "rate" if rate else "size"
        up = prefix[0].upper() + prefix[1:]
        raise ValueError(f"{name}: {unit!r} reads two ways (all lower case): {up}B"
                         f"{'/s' if rate else ''} (bytes) or {up}b{'ps' if rate else ''} (bits, 8× "
                         f"smaller); write the {kind} with B for bytes or b for bits")
    if base == "b" and not prefix and letters == letters.lower() and compact in ("b", "bps", "b/s"):
        raise ValueError(f"{name}: {unit!r} reads two ways: B is a byte and b a bit; write B or "
                         f"bytes{'/s' if rate else ''} for bytes, bit{'/s' if rate else ''} for bits")
    if prefix not in _PREFIXES:
        why = _WRONG_PREFIX.get(prefix) or _WRONG_PREFIX.get(prefix[:1])
        detail = f"{prefix} is {why}" if why else f"{prefix!r} is not a prefix"
        raise ValueError(f"{name}: cannot read the unit {unit!r}: {detail}; {_DATA_HINT}")
    factor = _PREFIXES[prefix] * (1.0 if is_byte else 1 / 8)
    return factor, rate


#: sizes the field labels and the old tables name (bytes), kept for readers of the labels
_BYTE_UNITS = {"B": 1.0, "KB": KB, "kB": KB, "MB": MB, "GB": GB, "TB": TB, "PB": PB,
               "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB, "PiB": PiB}
_TIME_UNITS = {
    "ns": ns, "us": us, "µs": us, "ms": ms,
    "s": s, "sec": s, "secs": s, "second": s, "seconds": s,
    "m": minute, "min": minute, "mins": minute, "minute": minute, "minutes": minute,
    "h": hour, "hr": hour, "hrs": hour, "hour": hour, "hours": hour,
    "d": day, "day": day, "days": day,
}
#: count suffixes: K (10^3), M (10^6), B or G (10^9), T (10^12), P (10^15)
_COUNT_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


def _split(text: object, name: str) -> tuple[float, str]:
    """``(number, unit)`` from text such as ``"1.5 GiB"``; a bare real number has no unit."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return finite_number(name, text), ""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be text such as '1GiB' or '90s', got {text!r}")
    match = re.fullmatch(rf"\s*{_NUMBER}\s*([^\d\s,].*?)?\s*", text)
    if not match:
        raise ValueError(f"{name}: cannot read {text!r} as a number with a unit")
    try:
        value = finite_number(name, float(match.group(1).replace(",", "")))
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not a finite number below 1e+30") from None
    return value, (match.group(2) or "").strip()


def _parse(text: object, name: str, table: dict[str, float], what: str, hint: str) -> float:
    """``text`` read with the unit looked up (case-insensitively) in ``table``."""
    value, unit = _split(text, name)
    factor = table.get(unit.lower())
    if factor is None:
        raise ValueError(f"{name}: unknown or missing {what} {unit!r} in {text!r}; {hint}")
    return _scaled(value, factor, name, text)


def _scaled(value: float, factor: float, name: str, text: object, base: str = "") -> float:
    out = value * factor
    if not math.isfinite(out) or abs(out) >= 1e30:
        limit = f"1e+30 {base}".strip()
        raise ValueError(f"{name}: {text!r} is too large: the course computes with values below {limit}")
    return out


def parse_bytes(text: str, name: str = "size") -> float:
    """Read a size such as ``1GiB``, ``512 MB``, ``4096`` (bytes) or ``8Gb`` (bits) into bytes.

    Parameters
    ----------
    text : str
        A number and an optional unit: B, kB/KB, MB, GB, TB, PB (powers of 10) or KiB, MiB,
        GiB, TiB (powers of 2); ``b`` or ``bit`` is a bit (``8Gb`` is 1 GB); a plain number
        is bytes. Case is the meaning: an all-lower-case ``gb`` is refused (bytes or bits?).
    name : str
        What the value is, named in the error message (the CLI passes ``"--size"``).

    Raises
    ------
    ValueError
        Naming ``name``: text that is not a number, an unknown or ambiguous unit, a rate, or a
        magnitude that would overflow.

    Examples
    --------
    >>> parse_bytes("1GiB"), parse_bytes("2.5 GB"), parse_bytes("4096"), parse_bytes("8Gb")
    (1073741824.0, 2500000000.0, 4096.0, 1000000000.0)
    """
    value, unit = _split(text, name)
    if not unit:
        return _scaled(value, 1.0, name, text, "bytes")
    found = data_unit(unit, name)
    if found is None or found[1]:
        what = "a rate; a size has no /s" if found else "not a size unit"
        raise ValueError(f"{name}: {unit!r} in {text!r} is {what}; write e.g. 1GiB, 512MB, 4096 "
                         "(bytes) or 8Gb (bits)")
    return _scaled(value, found[0], name, text, "bytes")


def parse_rate(text: str, name: str = "bandwidth") -> float:
    """Read a bandwidth such as ``25GB/s``, ``25GBps``, ``1.5 TiB/s`` or ``400Gbps`` into bytes/s.

    B is a byte and b a bit: ``GB/s``, ``GBps`` and ``GByte/s`` are bytes, ``Gbps``, ``Gb/s``
    and ``Gbit/s`` bits (divided by 8). A unit that reads two ways (``gbps``) is refused.

    Examples
    --------
    >>> parse_rate("25GB/s"), parse_rate("25GBps"), parse_rate("400Gbps"), parse_rate("400 Gbit/s")
    (25000000000.0, 25000000000.0, 50000000000.0, 50000000000.0)
    """
    value, unit = _split(text, name)
    found = data_unit(unit, name) if unit else None
    if found is None or not found[1]:
        what = ("a size; a bandwidth needs /s or ps" if found else
                "a plain number; give its unit" if not unit else "not a bandwidth unit")
        raise ValueError(f"{name}: {text!r} is {what}, e.g. 25GB/s or 25GBps (bytes), 1.5TiB/s, "
                         "400Gbps or 400Gbit/s (bits)")
    return _scaled(value, found[0], name, text, "bytes/s")


def parse_seconds(text: str, name: str = "duration") -> float:
    """Read a duration such as ``90s``, ``24h``, ``1.5 min``, ``10us`` or ``3d`` into seconds.

    The unit is required (a bare number is rejected: minutes or seconds?).

    Examples
    --------
    >>> parse_seconds("90s"), parse_seconds("24h"), parse_seconds("1.5 min")
    (90.0, 86400.0, 90.0)
    """
    return _parse(text, name, _TIME_UNITS, "time unit", "use ns, us, ms, s, min, h or d "
                  "(e.g. 90s, 24h)")


def parse_count(text: str, name: str = "count") -> float:
    """Read a count such as ``70B`` (billion), ``2T``, ``8e9`` or ``1.5M``.

    Suffixes: K (10^3), M (10^6), B or G (10^9), T (10^12), P (10^15).

    Examples
    --------
    >>> parse_count("70B"), parse_count("2T"), parse_count("8e9")
    (70000000000.0, 2000000000000.0, 8000000000.0)
    """
    return _parse(text, name, _COUNT_UNITS, "suffix", "use K, M, B, T (e.g. 70B, 2T) or a plain "
                  "number")


def parse_fraction(text: str, name: str = "fraction") -> float:
    """Read ``40%`` or ``0.4`` as a fraction.

    Examples
    --------
    >>> parse_fraction("40%"), parse_fraction("0.35")
    (0.4, 0.35)
    """
    value, unit = _split(text, name)
    if unit == "%":
        return value / 100.0
    if unit:
        raise ValueError(f"{name}: write a fraction as 0.4 or 40%, got {text!r}")
    return value


def parse_usd_per_hour(text: str, name: str = "price") -> float:
    """Read an hourly price such as ``40``, ``40USD/h`` or ``$40`` as USD per instance-hour.

    Examples
    --------
    >>> parse_usd_per_hour("40"), parse_usd_per_hour("$21.50"), parse_usd_per_hour("40 USD/hour")
    (40.0, 21.5, 40.0)
    """
    value, unit = _split(text.strip().lstrip("$") if isinstance(text, str) else text, name)
    if unit.lower().replace(" ", "") not in ("", "usd/h", "usd/hour", "usd", "$/h"):
        raise ValueError(f"{name}: write an hourly price in USD, e.g. 40 or 40USD/h; got {text!r}")
    return value


# --------------------------------------------------------------------------- fields of a widget

#: count units a field's label can name: "(B)" is billions (of parameters, tokens), not bytes
_FIELD_COUNTS = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def field_unit(label: str) -> tuple[str, str, float] | None:
    """``(unit, kind, size in base units)`` of the unit a widget label names, or ``None``.

    The unit is read from the label's last parentheses (``"chip MTBF (d)"``), a trailing
    ``%`` (``"MFU %"``), or a trailing rate (``"ckpt GB/s"``). ``kind`` is ``"time"``,
    ``"bytes"``, ``"rate"``, ``"count"`` or ``"percent"``; percent is 1/100.

    Examples
    --------
    >>> field_unit("chip MTBF (d)"), field_unit("MFU %"), field_unit("params (B)")
    (('d', 'time', 86400.0), ('%', 'percent', 0.01), ('B', 'count', 1000000000.0))
    >>> field_unit("FSx (GiB)"), field_unit("ckpt GB/s"), field_unit("TP (ranks)")
    (('GiB', 'bytes', 1073741824.0), ('GB/s', 'rate', 1000000000.0), None)
    """
    if not isinstance(label, str):
        raise ValueError(f"label must be text such as 'chip MTBF (d)', got {label!r}")
    label = label.strip()
    match = re.search(r"\(([^()]+)\)\s*$", label)
    if match:
        unit = match.group(1).strip()
    elif label.endswith("%"):
        unit = "%"
    else:  # a size or a rate named among the words ("MB per rank", "ckpt GB/s")
        unit = next((w for w in reversed(label.split()) if _label_data_unit(w)), "")
        if not unit:
            return None
    if unit == "%":
        return "%", "percent", 0.01
    if unit in _FIELD_COUNTS:
        return unit, "count", _FIELD_COUNTS[unit]
    if unit in _TIME_UNITS:
        return unit, "time", _TIME_UNITS[unit]
    found = _label_data_unit(unit)
    if found:
        return unit, ("rate" if found[1] else "bytes"), found[0]
    return None


def _label_data_unit(word: str) -> tuple[float, bool] | None:
    """A label's size or rate unit (not a bare ``B``, which a label uses for billions)."""
    if word in ("B", "b", "byte", "bytes"):
        return None
    try:
        return data_unit(word, "label")
    except ValueError:
        return None


def parse_in_unit(text: object, unit: str | None = None, kind: str | None = None, *,
                  size: float = 1.0, name: str = "value") -> tuple[float, bool]:
    """Read what a learner typed into a field whose unit is ``unit``.

    A plain number (``1e6``, ``-3``, ``2.5``) is in the field's unit; a number with a unit of
    the same kind (``24 h`` into a field in days, ``10 TB/s`` into one in GB/s, ``2T`` into one
    in billions, ``50%`` into a percentage) is converted to it. Anything else is rejected.

    Parameters
    ----------
    text : str or number
        What was typed.
    unit, kind, size : str, str, float
        The field's unit as :func:`field_unit` returns it (``None``: a plain number).
    name : str
        The field's label, named in the error message.

    Returns
    -------
    (value, converted) : (float, bool)
        The value in the field's unit, and whether a typed unit was converted.

    Raises
    ------
    ValueError
        Naming ``name`` and echoing ``text``: not a number, a unit of another kind or one that
        reads two ways (``gb``), or a magnitude the course does not compute with (said in the
        field's unit).

    Examples
    --------
    >>> parse_in_unit("24 h", "d", "time", size=86400.0, name="chip MTBF (d)")
    (1.0, True)
    >>> parse_in_unit("1e6"), parse_in_unit("50%", "%", "percent", size=0.01)
    ((1000000.0, False), (50.0, False))
    >>> parse_in_unit("10 TB/s", "GB/s", "rate", size=1e9)
    (10000.0, True)
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be text (the field's label), got {name!r}")
    if unit is not None and not isinstance(unit, str):
        raise ValueError(f"unit must be None or text such as 'd' or 'GB/s', got {unit!r}")
    if kind not in _FIELD_KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(str, _FIELD_KINDS))}, got {kind!r}")
    size = positive("size", size)
    shown = str(text).strip() if isinstance(text, str) else text
    if isinstance(text, str) and not text.strip():
        raise ValueError(f"{name}: type a number (the field is empty)")
    try:
        value, typed = _split(text, name)
    except ValueError as exc:
        if "finite number" in str(exc):
            raise ValueError(_too_large(name, shown, unit, size)) from None
        raise ValueError(f"{name}: cannot read {shown!r} as a number"
                         + (f" in {unit}" if unit else "")) from None
    hint = f"type a number in {unit}" if unit else "type a plain number"
    if not typed:
        return _checked(value, size, name, shown, unit), False
    if kind == "percent":
        if typed == "%":
            return _checked(value, size, name, shown, unit), False
        raise ValueError(f"{name}: cannot read {shown!r}; type a percentage such as 40 or 40%")
    if kind in ("rate", "bytes"):
        found = data_unit(typed, name)   # raises for a unit that reads two ways
        if found is None or found[1] != (kind == "rate"):
            what = "a bandwidth" if kind == "rate" else "a size"
            raise ValueError(f"{name}: cannot read {shown!r} as {what}; {hint} or with a unit such "
                             f"as {_EXAMPLES[kind]}")
        return _checked(value * found[0] / size, size, name, shown, unit), typed != unit
    table = {"time": _TIME_UNITS, "count": _COUNT_UNITS}.get(kind or "")
    key = typed if kind == "time" and typed in ("µs",) else typed.lower()
    if table is None or key not in table:
        raise ValueError(f"{name}: cannot read {shown!r}: {typed!r} is not a unit of this field; "
                         f"{hint}" + (f" or with a unit such as {_EXAMPLES[kind]}" if kind in _EXAMPLES else ""))
    return _checked(value * table[key] / size, size, name, shown, unit), typed != unit


_FIELD_KINDS = (None, "time", "bytes", "rate", "count", "percent")
_EXAMPLES = {"time": "90 s, 30 min, 24 h, 3 d", "bytes": "512 MiB, 24 TiB, 1.2 TB",
             "count": "70B, 2T, 1.5M", "rate": "GB/s, GBps, TB/s, Gbps or Gbit/s (bits)"}


def _too_large(name: str, shown: object, unit: str | None, size: float) -> str:
    """The message for a magnitude the course does not compute with, in the field's unit."""
    limit = 1e30 / size
    if unit == "%":
        where = f"{limit:.3g} %"
    else:
        where = f"{limit:.3g}" + (f" {unit}" if unit else "")
    return f"{name}: {shown!r} is too large; this field takes values below {where}"


def _checked(value: float, size: float, name: str, shown: object, unit: str | None = None) -> float:
    if not math.isfinite(value) or abs(value * size) >= 1e30:
        raise ValueError(_too_large(name, shown, unit, size))
    return value
