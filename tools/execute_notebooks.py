#!/usr/bin/env python3
"""Execute notebooks in a fresh kernel and store clean, reproducible outputs.

    python tools/execute_notebooks.py                 # every notebooks/*.ipynb
    python tools/execute_notebooks.py notebooks/00_start_here.ipynb

For each notebook: regenerate navigation (tools/navigation.py), run every cell
top to bottom in a new kernel started in ``notebooks/`` with a per-cell timeout,
retry once if the client stalls (nbclient issue 312), then store text outputs,
drop saved widget state and heavy HTML payloads, join a stream's pieces into one
output, strip volatile metadata, and
check that code cells ran in order 1..n. The result is what nbval strict mode
compares against in the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import navigation  # noqa: E402

CELL_TIMEOUT_S = 120
HEAVY_BYTES = 100_000  # drop any single HTML/JS payload larger than this
VOLATILE_CELL_METADATA = ("execution", "collapsed", "scrolled")


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop widget state, heavy payloads and volatile metadata."""
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                 "name": "python3"}
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            data = out.get("data")
            if data:
                for mime in ("text/html", "application/javascript"):
                    if mime in data and len(str(data[mime])) > HEAVY_BYTES:
                        del data[mime]
                if not data:
                    continue
            previous = kept[-1] if kept else None
            if (out.output_type == "stream" and previous is not None and previous.output_type == "stream"
                    and previous.name == out.name):
                previous.text += out.text  # a busy kernel may flush one print in pieces
                continue
            kept.append(out)
        cell.outputs = kept
    return nb


def check_order(nb: nbformat.NotebookNode, path: Path) -> None:
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    if counts != list(range(1, len(counts) + 1)):
        raise RuntimeError(f"{path}: code cells not executed in order: {counts}")


def execute(path: Path, attempts: int = 2) -> float:
    navigation.update_notebook(path)
    for attempt in range(1, attempts + 1):
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}},
                                store_widget_state=False, record_timing=False)
        start = time.perf_counter()
        try:
            client.execute()
        except (CellTimeoutError, DeadKernelError) as exc:
            if attempt == attempts:
                raise
            print(f"  {path.name}: {type(exc).__name__}, retrying", flush=True)
            continue
        elapsed = time.perf_counter() - start
        clean(nb)
        check_order(nb, path)
        nbformat.validate(nb)
        nbformat.write(nb, path)
        return elapsed
    raise AssertionError("unreachable")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    navigation.update_readme()
    for path in paths:
        elapsed = execute(path.resolve())
        print(f"executed {path.name} in {elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
