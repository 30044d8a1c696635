"""Chapter 08's views: an NKI kernel of :mod:`trainium_lab.nki_reference` as a Markdown listing."""

from __future__ import annotations

from trainium_lab import nki_reference
from trainium_lab._validate import choice

__all__ = ["nki_listing"]


def nki_listing(name: str) -> str:
    """Markdown for one NKI kernel: what it stands beside, then its source in a code block.

    Examples
    --------
    >>> text = nki_listing("softmax")
    >>> text.startswith("**NKI, not executed here**") and "kernels.softmax" in text.splitlines()[0]
    True
    >>> "nisa.activation(" in text
    True
    """
    name = choice("name", name, tuple(nki_reference.KERNELS))
    return (f"**NKI, not executed here** (beside the emulator's `{nki_reference.EMULATOR_KERNEL[name]}`):\n\n"
            f"```python\n{nki_reference.KERNELS[name].rstrip()}\n```")
