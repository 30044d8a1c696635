"""Altair chart builders: ``<thing>_chart(df, ...) -> alt.Chart``.

Encodings only: every number a chart shows was computed by a model first.
Each chapter has its own module (``charts.start``, ``charts.hardware``...).
"""
