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


class DatasetTemplate:
    """Mixin for a top-level chart whose data all sit in top-level named ``datasets``.

    Only the datasets change from one widget update to the next, so the rest of the
    spec is converted once (:meth:`freeze`) and reused: ``to_dict(validate=False)``
    with default options returns that spec plus the current datasets in ~1 ms
    instead of Altair's rebuild of tens of milliseconds. Any other call goes
    through Altair. Use it first in the bases: ``class C(DatasetTemplate, alt.LayerChart)``.
    """

    def to_dict(self, validate: bool = True, *, format: str = "vega-lite",
                ignore: list[str] | None = None, context: dict | None = None) -> dict:
        spec = self.__dict__.get("_spec")
        if validate or format != "vega-lite" or ignore or context or spec is None:
            return super().to_dict(validate=validate, format=format, ignore=ignore,
                                   context=context)
        return {**spec, "datasets": self._kwds["datasets"]}

    def freeze(self):
        """Convert the spec once (without datasets) and keep it; returns the chart."""
        spec = super().to_dict(validate=False)
        spec.pop("datasets", None)
        object.__setattr__(self, "_spec", spec)
        return self

    def with_datasets(self, datasets: dict[str, list[dict]]):
        """A copy sharing the converted spec, with new datasets (no Altair re-validation)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        object.__setattr__(clone, "_kwds", {**self._kwds, "datasets": datasets})
        return clone
