"""Stored outputs do not depend on the processor.

numpy picks SIMD kernels per CPU (and OpenBLAS its GEMM kernels), so the last bits of ``exp``,
sums and matmuls differ between machines. What nbval compares must not: charts are stored with
data and coordinates rounded (``charts.base.svg_renderer``) and compared by what they say (the
``svg-geometry`` pattern of ``tools/nbval_sanitize.cfg``), printed numbers are formatted, and the
models behind the notebooks avoid BLAS where a last bit could flip a rounding decision.

The proof on one machine: every notebook passes nbval again with every optional CPU feature
numpy found on this machine turned off, as a processor without them would compute.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = ROOT / "tools" / "nbval_sanitize.cfg"

pytestmark = pytest.mark.slow


def found_cpu_features() -> list[str]:
    """The dispatchable features numpy found here above its baseline (read at run time)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def nbval(paths, tmp_path, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--nbval", "--nbval-cell-timeout=120", f"--nbval-sanitize-with={SANITIZE}",
         "-o", "addopts=", "-o", "filterwarnings=", *map(str, paths)],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=env)


def test_every_notebook_passes_with_numpy_cpu_features_off(tmp_path):
    features = found_cpu_features()
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(features))
    probe = subprocess.run(
        [sys.executable, "-c", "from numpy._core._multiarray_umath import __cpu_features__ as f;"
         f"print([k for k in {features!r} if f.get(k)])"],
        env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "[]", f"features still on: {probe.stdout}"
    result = nbval(NOTEBOOKS, tmp_path, env)
    assert result.returncode == 0, (f"with {features} off:\n" + result.stdout[-4000:])


def _svg_outputs(nb):
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if "image/svg+xml" in out.get("data", {}) and "nbval-ignore-output" not in \
                    cell["metadata"].get("tags", []):
                yield out


def _copy_with(tmp_path, name, change):
    nb = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8"))
    out = next(_svg_outputs(nb))
    svg = "".join(out["data"]["image/svg+xml"])
    changed = change(svg)
    assert changed != svg
    out["data"]["image/svg+xml"] = changed
    path = tmp_path / name
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_stored_charts_hold_no_subpixel_coordinates():
    """No compared chart coordinate carries more precision than a reader could see."""
    long_decimal = re.compile(r"\d+\.\d{3,}")
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for out in _svg_outputs(nb):
            svg = "".join(out["data"]["image/svg+xml"])
            tags = "".join(re.findall(r"<[^>]*>", svg))
            assert not long_decimal.search(tags), f"{path.name}: {long_decimal.search(tags)[0]}"


def test_chart_geometry_noise_passes_but_a_changed_label_fails(tmp_path):
    """The comparison is by what a chart says: moving a path by a hundredth of a pixel passes,
    changing one axis label or title character fails."""
    def nudge(svg):
        return re.sub(r'(<path[^>]* d="M)(\d+)', lambda m: f"{m.group(1)}{int(m.group(2)) + 1}",
                      svg, count=1)

    def relabel(svg):
        return re.sub(r"(<text[^>]*>)([^<]*\d)", lambda m: m.group(1) + m.group(2)[:-1]
                      + str((int(m.group(2)[-1]) + 1) % 10), svg, count=1)

    moved = nbval([_copy_with(tmp_path, "moved.ipynb", nudge)], tmp_path)
    assert moved.returncode == 0, moved.stdout[-2000:]
    relabelled = nbval([_copy_with(tmp_path, "relabelled.ipynb", relabel)], tmp_path)
    assert relabelled.returncode != 0 and "1 failed" in relabelled.stdout, relabelled.stdout[-2000:]
