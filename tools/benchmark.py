#!/usr/bin/env python3
"""Measure what a learner waits for: importing the package and each widget's update.

    python3 tools/course.py bench          # or: .venv/bin/python tools/benchmark.py [--json]

For every widget factory registered with ``@benchmarked`` (trainium_lab.widgets.*), the
widget is built once, then each registered control change is applied in turn and the time
from setting ``control.value`` to the callback having run the model and replaced the chart
spec is recorded (median and worst of several rounds). This is the kernel-side part of the
latency; the page, the Jupyter server and Vega's redraw add the rest, which ``--browser``
measures. Model benchmarks from ``tools/benchmarks/bench_*.py`` follow.
Target: widget updates under 50 ms on this machine. ``--browser`` then runs
``tools/benchmarks/browser.py``: key press to changed chart in JupyterLab in headless Chromium,
median per chapter (target: at most 50 ms).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import pkgutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 50.0
ROUNDS = 5


def import_time_s() -> float:
    """Median wall time of ``import trainium_lab`` (plus specs loading) in a fresh interpreter."""
    code = ("import time; t = time.perf_counter(); import trainium_lab; "
            "from trainium_lab import specs; specs.chip('trn2'); print(time.perf_counter() - t)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(3)]
    return statistics.median(times)


def widget_rows() -> list[dict]:
    import trainium_lab.widgets as widgets_pkg
    from trainium_lab.widgets.base import BENCHMARKS

    for info in pkgutil.iter_modules(widgets_pkg.__path__):
        importlib.import_module(f"trainium_lab.widgets.{info.name}")
    rows = []
    for name, (factory, changes) in sorted(BENCHMARKS.items()):
        try:
            rows.append(_time_widget(name, factory, changes))
        except Exception as exc:  # report, do not hide the other widgets' timings
            rows.append({"name": f"widget {name}", "value": float("nan"), "unit": "ms",
                         "target": f"< {TARGET_MS:.0f} ms", "ok": False, "error": str(exc)})
    return rows


def _time_widget(name, factory, changes) -> dict:
    start = time.perf_counter()
    explorer = factory()
    build_ms = (time.perf_counter() - start) * 1e3
    original = {c: explorer.controls[c].value for c, _ in changes}
    samples = []
    for _ in range(ROUNDS):
        for control, value in changes:
            for v in (value, original[control]):
                before = explorer.updates
                t = time.perf_counter()
                explorer.controls[control].value = v
                samples.append((time.perf_counter() - t) * 1e3)
                if explorer.last_error:
                    raise RuntimeError(f"{name}: {control}={v!r} gave an error: {explorer.last_error}")
                if explorer.updates == before:
                    raise RuntimeError(f"{name}: changing {control} did not update the widget")
    return {"name": f"widget {name}", "value": statistics.median(samples), "unit": "ms",
            "worst": max(samples), "build_ms": build_ms, "target": f"< {TARGET_MS:.0f} ms",
            "ok": max(samples) < TARGET_MS}


def model_rows() -> list[dict]:
    rows = []
    sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))  # their shared _timing helper
    for path in sorted((ROOT / "tools" / "benchmarks").glob("bench_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for row in module.run():
            rows.append({"source": path.name, **row})
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Time widget updates and models.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--widgets-only", action="store_true")
    parser.add_argument("--browser", action="store_true",
                        help="also time key press to chart in the browser (tools/benchmarks/browser.py)")
    args = parser.parse_args(argv)
    rows = [{"name": "import trainium_lab + load data/", "value": import_time_s() * 1e3, "unit": "ms"}]
    rows += widget_rows()
    if not args.widgets_only:
        rows += model_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            extra = f"  (worst {r['worst']:.1f} ms, build {r['build_ms']:.0f} ms)" if "worst" in r else ""
            target = f"  target {r['target']}" if r.get("target") else ""
            flag = "" if r.get("ok", True) else "  ABOVE TARGET"
            if r.get("error"):
                flag = f"  ERROR: {r['error']}"
            print(f"{r['name']:<58} {r['value']:>10.3g} {r['unit']:<8}{extra}{target}{flag}")
    if args.browser:
        return subprocess.run([sys.executable, str(ROOT / "tools" / "benchmarks" / "browser.py"),
                               *(["--json"] if args.json else [])]).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
