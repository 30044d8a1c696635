"""Explanations and documents built from model results: prose and layout live here, not in the
models (STYLE.md, "Models return numbers").

The model modules (:mod:`trainium_lab.layouts`, :mod:`trainium_lab.topology`...) return
numbers, frozen dataclasses and tidy DataFrames in base units. What a chart or a sentence
shows (display labels, a block diagram's positions, an explanation in words, a formula
written out, a document) is made here, from those results, one module per chapter. Charts,
widgets and notebooks call these functions; models never import this package (a model method
kept for an old caller may delegate here on use). Pure: the standard library, numpy, pandas
and the model modules; no altair, no ipywidgets.
"""

from trainium_lab.views.hardware import core_counts_long, neuroncore_blocks
from trainium_lab.views.layouts import explain_plan, tp_label
from trainium_lab.views.numerics import bit_formula
from trainium_lab.views.topology import chip_map

__all__ = ["core_counts_long", "neuroncore_blocks", "bit_formula", "chip_map", "explain_plan", "tp_label"]
