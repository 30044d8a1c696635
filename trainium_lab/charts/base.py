"""Shared chart defaults."""

from __future__ import annotations

import altair as alt

WIDTH = 460
HEIGHT = 240
#: categorical palette used across chapters (colour-blind safe, Tableau 10)
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def base(data, *, title: str | None = None, width: int = WIDTH, height: int = HEIGHT) -> alt.Chart:
    """An ``alt.Chart`` with the course's size and title conventions."""
    kwargs = {"width": width, "height": height}
    if title:
        kwargs["title"] = title
    return alt.Chart(data, **kwargs)
