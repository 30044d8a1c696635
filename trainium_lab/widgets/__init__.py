"""Widget factories: controls wired to a model and a chart, nothing else.

Each chapter has its own module (``widgets.start``, ``widgets.hardware``...).
Factories decorated with :func:`trainium_lab.widgets.base.benchmarked` are
picked up by ``tools/benchmark.py``.
"""
