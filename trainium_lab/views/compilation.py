"""Chapter 07's views: the sourced compiler facts as a folded reference, one block per topic."""

from __future__ import annotations

import html

import pandas as pd

from trainium_lab._validate import instance

__all__ = ["facts_reference_html"]

_COLUMNS = ("fact", "value", "unit", "status", "source_id", "note")


def facts_reference_html(facts: pd.DataFrame) -> str:
    """HTML of ``<details>`` blocks, one per topic, each holding that topic's facts as a table.

    Parameters
    ----------
    facts : pandas.DataFrame
        Rows of :func:`trainium_lab.compilation.compiler_facts` (``topic`` plus the columns
        fact, value, unit, status, source_id, note).

    Examples
    --------
    >>> from trainium_lab import compilation
    >>> text = facts_reference_html(compilation.compiler_facts("neuron cache"))
    >>> text.count("<details>"), "/var/tmp/neuron-compile-cache" in text
    (1, True)
    """
    df = instance("facts", facts, pd.DataFrame, "a DataFrame from compilation.compiler_facts")
    missing = [c for c in ("topic", *_COLUMNS) if c not in df.columns]
    if missing:
        raise ValueError(f"facts must have the columns of compilation.compiler_facts; missing {missing}")
    blocks = []
    for topic, rows in df.groupby("topic", sort=False):
        table = rows[list(_COLUMNS)].fillna("").to_html(index=False, escape=True, border=0)
        blocks.append(f"<details><summary>{html.escape(str(topic))} ({len(rows)} facts)</summary>\n\n"
                      f"{table}\n\n</details>")
    return "\n\n".join(blocks)
