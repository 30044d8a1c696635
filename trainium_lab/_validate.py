"""Input checks shared by every public function.

Each check returns the cleaned value or raises ``ValueError`` whose message
names the parameter and the valid range, so a widget can show it as it is.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable, Sequence, TypeVar

T = TypeVar("T")


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
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, got {_describe(value)}")
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
    """An integer (Python or numpy, not bool) with ``minimum <= value <= maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {_describe(value)}")
    out = int(value)
    if out < minimum or (maximum is not None and out > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
        raise ValueError(f"{name} must be an integer {bound}, got {_describe(value)}")
    return out


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
