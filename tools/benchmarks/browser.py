#!/usr/bin/env python3
"""What a learner waits for in the browser: from a key press on a control to the changed chart
on screen, per chapter, in JupyterLab in headless Chromium.

    .venv/bin/python tools/benchmarks/browser.py [notebooks/NN_x.ipynb ...] [--presses 8] [--json]
    python3 tools/course.py bench --browser        # the same, after the kernel-side benchmark

For each notebook: open it in JupyterLab (the browser test's server, ``tests/test_browser.py``),
clear the outputs, run all cells, then in every explorer that draws a chart, press a key on its
first slider (ArrowRight / ArrowLeft in turn; a chapter without sliders: the next option of
its first menu) ``--presses`` times. Each time is from the ``keydown`` (or ``change``) event in
the page to the first animation frame after the chart's SVG differs: the kernel round trip, the
widget messages and Vega's redraw. Reported: the median and worst per chapter; the course's
target is a median of at most 50 ms (issue 30). ``TRAINIUM_LAB_FULL_CHART_UPDATES=1`` makes the
explorers send their whole spec on every update (the old way) for comparison.

This is a benchmark, not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_MS = 50.0

# Arm a one-shot timer: t0 at the trigger event, the result at the first frame after the chart's
# SVG changed (a MutationObserver on the explorer), or null after 5 s.
ARM_JS = r"""
([i, trigger]) => {
  const ex = document.querySelector(`.tl-explorer[data-tl-index="${i}"]`);
  const fp = () => { const s = ex.querySelector('svg.marks'); return s ? s.innerHTML : ''; };
  const before = fp();
  window.__tlResult = undefined;
  let t0 = null;
  const start = (e) => { if (t0 === null) t0 = performance.now(); };
  document.addEventListener(trigger, start, {capture: true, once: true});
  const obs = new MutationObserver(() => {
    if (t0 === null || fp() === before) return;
    obs.disconnect();
    requestAnimationFrame(() => { window.__tlResult = performance.now() - t0; });
  });
  obs.observe(ex, {subtree: true, childList: true, attributes: true, characterData: true});
  setTimeout(() => { obs.disconnect(); if (window.__tlResult === undefined) window.__tlResult = null; }, 5000);
}
"""


def _load_browser_test():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_browser  # the JupyterLab server and page helpers of the browser test

    return test_browser


def measure_notebook(tb, lab, context, path: Path, presses: int) -> list[float]:
    """Slider-to-chart times (ms) of every explorer with a chart in one notebook."""
    import shutil

    shutil.copy2(path, lab.root / path.name)
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        (f"{lab.base}/", "data:", "blob:")) else route.abort())
    times: list[float] = []
    try:
        page.goto(lab.url(path.name))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        lab.wait_kernel_idle(path.name, page)
        tb._menu(page, "Edit", "editmenu:clear-all")
        tb._menu(page, "Run", "runmenu:run-all")
        page.wait_for_function(tb.ALL_RAN_JS, timeout=tb.RUN_ALL_TIMEOUT_MS)
        page.wait_for_timeout(1500)
        explorers = page.evaluate(tb.CONTROLS_JS)
        for i, controls in enumerate(explorers):
            ex = page.query_selector(f'.tl-explorer[data-tl-index="{i}"]')
            if not ex.query_selector("svg.marks"):
                continue
            usable = [c for c in controls if not c["disabled"]]
            control = next((c for c in usable if c["kind"] == "slider"), None) \
                or next((c for c in usable if c["kind"] == "select"), None)
            if control is None:
                continue
            ex.scroll_into_view_if_needed()
            for k in range(presses):
                el = tb._control(page, control["id"])
                tb._settle(page, i)
                if control["kind"] == "slider":
                    handle = el.query_selector(".noUi-handle")
                    handle.focus()
                    page.evaluate(ARM_JS, [i, "keydown"])
                    handle.press("ArrowRight" if k % 2 == 0 else "ArrowLeft")
                else:
                    select = el.query_selector("select")
                    options = select.evaluate("s => [...s.options].map(o => o.value)")
                    current = select.evaluate("s => s.selectedIndex")
                    page.evaluate(ARM_JS, [i, "input"])
                    select.select_option(options[(current + 1) % len(options)])
                page.wait_for_function("() => window.__tlResult !== undefined", timeout=10_000)
                result = page.evaluate("() => window.__tlResult")
                if result is not None:
                    times.append(float(result))
    finally:
        page.close()
        lab.shutdown_kernels()
    return times


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--presses", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.presses < 1:
        print("browser.py: --presses must be >= 1", file=sys.stderr)
        return 2
    tb = _load_browser_test()
    if not tb.CHROMIUM.exists():
        print(f"browser.py: needs {tb.CHROMIUM} (Debian package 'chromium')", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        lab = tb.Lab(Path(tmp))
        try:
            chromium = pw.chromium.launch(executable_path=str(tb.CHROMIUM), args=tb.CHROMIUM_ARGS)
            context = chromium.new_context(viewport={"width": 1440, "height": 900})
            for path in paths:
                start = time.monotonic()
                times = measure_notebook(tb, lab, context, path.resolve(), args.presses)
                row = {"chapter": path.stem, "n": len(times),
                       "median_ms": statistics.median(times) if times else None,
                       "worst_ms": max(times) if times else None,
                       "wall_s": time.monotonic() - start}
                rows.append(row)
                if not args.json:
                    med = "—" if row["median_ms"] is None else f"{row['median_ms']:.0f} ms"
                    worst = "—" if row["worst_ms"] is None else f"{row['worst_ms']:.0f} ms"
                    flag = "" if row["median_ms"] is None or row["median_ms"] <= TARGET_MS else "  ABOVE TARGET"
                    print(f"{path.stem:<28} median {med:>7}  worst {worst:>7}  ({len(times)} presses)"
                          f"{flag}", flush=True)
            context.close()
            chromium.close()
        finally:
            lab.stop()
    if args.json:
        print(json.dumps({"full_chart_updates": os.environ.get("TRAINIUM_LAB_FULL_CHART_UPDATES") == "1",
                          "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
