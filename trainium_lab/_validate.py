"""Input checks shared by every public function.

Each check returns the cleaned value or raises ``ValueError`` whose message
names the parameter and the valid range, so a widget can show it as it is.
"""

from __future__ import annotations

import math
import numbers
from typing import Callable, Iterable, Sequence, TypeVar

T = TypeVar("T")

#: no quantity in the course reaches this magnitude in base units (the largest, training FLOPs
#: of frontier runs, are ~1e26); larger inputs are typos or overflow and are rejected
MAX_MAGNITUDE = 1e30
#: the largest integer a count may be: every integer up to it is exact as a float
MAX_INTEGER = 2**53


class UnknownNameError(ValueError, KeyError):
    """An unknown name (chip, system, dtype, preset...). Also a ``KeyError``."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def finite_number(name: str, value: object) -> float:
    """Return ``value`` as a float; reject bools, non-numbers, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {_describe(value)}")
    try:
        out = float(value)
    except OverflowError:  # an int beyond the float range
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, got {_describe(value)}")
    if abs(out) >= MAX_MAGNITUDE:
        raise ValueError(f"{name} must be a finite number of magnitude below {MAX_MAGNITUDE:g}, "
                         f"got {_describe(value)}")
    return out


def positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0 with ``allow_zero``)."""
    out = finite_number(name, value)
    if out < 0 or (out == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {_describe(value)}")
    return out


def in_range(name: str, value: object, low: float, high: float, *,
             low_open: bool = False, high_open: bool = False) -> float:
    """A finite number inside an interval; the message states the interval."""
    out = finite_number(name, value)
    too_low = out <= low if low_open else out < low
    too_high = out >= high if high_open else out > high
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {left}{low:g}, {high:g}{right}, got {_describe(value)}")
    return out


def integer(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (Python or numpy, not bool) with ``minimum <= value <= maximum``.

    ``maximum`` defaults to ``MAX_INTEGER`` (2**53): larger counts are not exact as floats.
    """
    if maximum is None:
        maximum = MAX_INTEGER
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {_describe(value)}")
    out = int(value)
    if out < minimum or out > maximum:
        bound = f">= {minimum}" if maximum == MAX_INTEGER else f"in [{minimum}, {maximum:,}]"
        raise ValueError(f"{name} must be an integer {bound}, got {_describe(value)}")
    return out


def sequence(name: str, value: object, item: Callable[[str, object], T], *,
             min_length: int = 1, max_length: int = 100_000) -> list[T]:
    """A list, tuple, range or 1-d array of items, each checked by ``item(name, x)``.

    A string, a scalar or ``None`` is rejected with a message naming the parameter.
    """
    import numpy as np

    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, range, np.ndarray)):
        raise ValueError(f"{name} must be a sequence (list or tuple), got {_describe(value)}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {value.shape}")
    if not min_length <= len(value) <= max_length:
        raise ValueError(f"{name} must hold between {min_length} and {max_length:,} items, "
                         f"got {len(value)}")
    return [item(f"{name}[{i}]", x) for i, x in enumerate(value)]


def instance(name: str, value: object, cls: type[T] | tuple[type, ...], what: str) -> T:
    """``value`` if it is an instance of ``cls``; else a ``ValueError`` saying what was expected."""
    if not isinstance(value, cls):
        raise ValueError(f"{name} must be {what}, got {_describe(value)}")
    return value  # type: ignore[return-value]


def choice(name: str, value: object, options: Iterable[T]) -> T:
    """One of ``options``; the message lists them."""
    opts: Sequence[T] = tuple(options)
    try:
        if value in opts:
            return value  # type: ignore[return-value]
    except TypeError:
        pass
    listed = ", ".join(repr(o) for o in opts)
    raise UnknownNameError(f"{name} must be one of {listed}; got {_describe(value)}")
