#!/usr/bin/env python3
"""Insert each chapter's structure diagram (``trainium_lab.diagrams``) into its notebook.

    python tools/insert_diagrams.py            # insert where missing, then re-execute the chapters
    python tools/insert_diagrams.py --check    # list where each diagram would go; exit 1 if an
                                               # anchor is missing or not unique

``MAPPING`` says, per chapter, after which cell a diagram goes: the anchor is text that exactly one
cell of the chapter contains (a heading, or a line of code whose variables the call uses); the
diagram's code cell goes right after the first code cell at or after that cell, so that the
variables it needs exist. The cell is ``from trainium_lab import diagrams`` and the call; a cell
with the same source already in the notebook is not inserted again (idempotent). The notebook must
then be re-executed (``tools/execute_notebooks.py``) to store the SVG.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: chapter -> [(anchor text in exactly one cell, the call)]
MAPPING: dict[str, list[tuple[str, str]]] = {
    "00": [("## Where every number comes from", "diagrams.hierarchy()")],
    "01": [("## Chips, physical cores and logical cores", 'diagrams.logical_cores("trn2.48xlarge", 2)')],
    "02": [("## 1. Anatomy of a float", "diagrams.bit_layouts()")],
    "03": [("`topology.place` hands out ranks in order", "diagrams.torus_placement(tp=64, pp=4, dp=2)"),
           ("## Ring all-reduce, step by step", "diagrams.ring_allreduce(4)"),
           ("A faster way to use a slow level is to send less over it",   # act: the chapter's TP block
            'diagrams.hierarchical_allreduce(act, n_systems=4, outer="trn2-neuronlink-inter")')],
    "04": [("## 4. How many chips, how many systems", 'diagrams.memory_stack("llama3-70b", "trn2")')],
    "06": [("rel.resume_recovery(", "diagrams.restart_timeline(recs)")],
    "07": [("uniform = np.arange(1, 129)", "diagrams.bucket_lifecycle()")],   # the bucketing code (07 is being restructured)
    "08": [("## The memory hierarchy, as numbers", 'diagrams.tile_path("trn2")'),
           ("## Double buffering: the engine timeline", "diagrams.double_buffering()")],
    "09": [("growth = serving.kv_growth_table(", 'diagrams.kv_cache_growth("llama3-70b", "trn2", tp=8)')],
    "10": [("## How Neuron's stacks dispatch: all-gather, or all-to-all-v", "diagrams.moe_dispatch()")],
    "11": [("## A deadline: Llama 3 405B on Trn2 UltraServers", "diagrams.capstone_days()")],
}


def cell_source(call: str) -> str:
    return f"from trainium_lab import diagrams\n\n{call}"


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def target_index(cells, anchor: str) -> int:
    """Index of the cell the diagram goes after (raises ValueError naming the anchor)."""
    hits = [i for i, c in enumerate(cells) if anchor in _source(c)]
    if len(hits) != 1:
        raise ValueError(f"anchor {anchor!r} must be in exactly one cell; found in {len(hits)}")
    for i in range(hits[0], len(cells)):
        if cells[i]["cell_type"] == "code":
            return i
    raise ValueError(f"anchor {anchor!r}: no code cell at or after it")


def insert(path: Path, spec: list[tuple[str, str]]) -> int:
    """Insert the diagram cells of ``spec`` into the notebook at ``path``; return how many."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    added = 0
    for anchor, call in spec:
        src = cell_source(call)
        if any(_source(c) == src for c in nb.cells):
            continue
        i = target_index(nb.cells, anchor)
        cell = nbformat.v4.new_code_cell(src)
        cell.id = "diagram-" + re.sub(r"\W+", "-", call.split("(")[0].split(".")[-1]).strip("-")
        nb.cells.insert(i + 1, cell)
        added += 1
    if added:
        nbformat.write(nb, path)
    return added


def notebook(chapter: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{chapter}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"chapter must name one notebook; {chapter!r} matches {len(found)}")
    return found[0]


def check() -> list[str]:
    """Problems with the mapping (an anchor missing or not unique); empty when all resolve."""
    import json

    problems = []
    for ch, spec in MAPPING.items():
        cells = json.loads(notebook(ch).read_text(encoding="utf-8"))["cells"]
        for anchor, call in spec:
            try:
                target_index(cells, anchor)
            except ValueError as exc:
                problems.append(f"{ch}: {exc}")
    return problems


def main(argv: list[str] | None = None) -> int:
    import json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only show where each diagram would go")
    parser.add_argument("chapters", nargs="*", help="chapters (00 … 11); default: every one mapped")
    args = parser.parse_args(argv)
    chapters = args.chapters or list(MAPPING)
    if args.check:
        for ch in chapters:
            cells = json.loads(notebook(ch).read_text(encoding="utf-8"))["cells"]
            for anchor, call in MAPPING[ch]:
                try:
                    i = target_index(cells, anchor)
                    print(f"{ch}: {call} after cell {i} ({_source(cells[i]).splitlines()[0][:60]!r})")
                except ValueError as exc:
                    print(f"{ch}: {exc}")
        problems = check()
        return 1 if problems else 0
    for ch in chapters:
        n = insert(notebook(ch), MAPPING[ch])
        print(f"{notebook(ch).name}: {n} diagram cell(s) inserted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
