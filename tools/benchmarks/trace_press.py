#!/usr/bin/env python3
"""Where a slider press's time goes on the page: a Chromium performance trace of a few presses
on one explorer, summarised as the page's main-thread tasks after each key press.

    .venv/bin/python tools/benchmarks/trace_press.py notebooks/11_capstone.ipynb [--explorer 0]
        [--presses 4] [--trace OUT.json]

``tools/benchmarks/browser.py`` times a press from the ``keydown`` to the changed chart on
screen and splits it by the page's websocket frames; this script says what the page's main
thread does in that time. It opens the notebook in JupyterLab in headless Chromium (the browser
test's server and page helpers, ``tests/test_browser.py``), runs it, presses the explorer's
first slider (as the benchmark does, to values not shown before), and records a trace with the
``devtools.timeline`` categories. For each press it prints every main-thread task of 0.8 ms or
more in the 120 ms after the key press: its start after the ``keydown``, its length and what it
spent time in (``EventDispatch``: an input event; ``_onWSMessage``: a kernel message, with the
microtasks it started, where ipywidgets and Vega run; ``Layout``, ``Paint``, ``Layerize``,
``Commit``: a frame of the browser's rendering pipeline).

This is a diagnostic, not a test: the trace depends on the machine and its load.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as bench  # noqa: E402  (the benchmark's page helpers and timers)

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute",
              "blink.user_timing"]
PARTS = ("EventDispatch", "FunctionCall", "RunMicrotasks", "UpdateLayoutTree", "Layout", "PrePaint",
         "Paint", "Layerize", "Commit", "HitTest", "FireAnimationFrame", "ParseHTML")
WINDOW_US = 120_000
MIN_TASK_US = 800


def record(notebook: Path, explorer: int, presses: int, trace: Path) -> list[dict]:
    """Press the first slider of explorer ``explorer`` in ``notebook`` ``presses`` times with a
    trace recording to ``trace``; returns the benchmark's timings of those presses."""
    tb = bench._load_browser_test()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        lab = tb.Lab(Path(tmp), windowing_mode=None)  # as a learner has it, like browser.py
        try:
            chromium = pw.chromium.launch(executable_path=str(tb.CHROMIUM), args=tb.CHROMIUM_ARGS)
            context = chromium.new_context(viewport={"width": 1440, "height": 900})
            context.add_init_script(bench.WEBSOCKET_JS)
            shutil.copy2(notebook, lab.root / notebook.name)
            page = bench.new_page(lab, context)
            bench.run_all(tb, lab, page, notebook.name)
            explorers = page.evaluate(tb.CONTROLS_JS)
            if not 0 <= explorer < len(explorers):
                raise ValueError(f"--explorer must be in 0..{len(explorers) - 1} for {notebook.name}; "
                                 f"got {explorer}")
            sliders = [c for c in explorers[explorer] if c["kind"] == "slider" and not c["disabled"]]
            if not sliders:
                raise ValueError(f"--explorer {explorer} of {notebook.name} has no slider to press")
            sel = f'.tl-explorer[data-tl-index="{explorer}"]'
            page.query_selector(sel).scroll_into_view_if_needed()
            going: dict = {}
            for k in range(2):  # warm up: the first presses compile Vega's dataflow paths
                tb._settle(page, explorer)
                bench._press(tb, page, tb._control(page, sliders[0]["id"]).query_selector(".noUi-handle"),
                             k, sel, "svg.marks", going)
            chromium.start_tracing(page=page, path=str(trace), categories=CATEGORIES)
            results = []
            for k in range(presses):
                tb._settle(page, explorer)
                results.append(bench._press(tb, page, tb._control(page, sliders[0]["id"]).query_selector(
                    ".noUi-handle"), k, sel, "svg.marks", going))
            chromium.stop_tracing()
            page.close()
            context.close()
            chromium.close()
        finally:
            lab.stop()
    return results


def main_thread_tasks(trace: Path) -> list[list[dict]]:
    """Per key press in ``trace``: the renderer main thread's tasks of at least 0.8 ms in the
    120 ms from the ``keydown``, each ``{"start_ms", "dur_ms", "parts": {name: ms}, "calls"}``."""
    data = json.loads(trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    main = {(e["pid"], e["tid"]) for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"}
    on_main = [e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X"]
    keydowns = sorted(e["ts"] for e in on_main if e["name"] == "EventDispatch"
                      and e.get("args", {}).get("data", {}).get("type") == "keydown")
    presses = []
    for t0 in keydowns:
        window = [e for e in on_main if t0 - 5_000 <= e["ts"] <= t0 + WINDOW_US]
        tasks = [e for e in window if e["name"] in ("RunTask", "ThreadControllerImpl::RunTask")
                 and e.get("dur", 0) >= MIN_TASK_US and e["ts"] + e["dur"] >= t0]
        rows = []
        for task in sorted(tasks, key=lambda e: e["ts"]):
            end = task["ts"] + task["dur"]
            inside = [e for e in window if e is not task and e["ts"] >= task["ts"] and e["ts"] + e.get("dur", 0) <= end]
            parts = collections.Counter()
            calls = []
            for e in inside:
                if e["name"] in PARTS:
                    parts[e["name"]] += e.get("dur", 0) / 1000
                if e["name"] in ("EventDispatch", "FunctionCall"):
                    d = e.get("args", {}).get("data", {})
                    name = d.get("type") or d.get("functionName")
                    if name and name not in calls:
                        calls.append(name)
            rows.append({"start_ms": (task["ts"] - t0) / 1000, "dur_ms": task["dur"] / 1000,
                         "parts": dict(parts.most_common()), "calls": calls[:4]})
        presses.append(rows)
    return presses


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--explorer", type=int, default=0)
    parser.add_argument("--presses", type=int, default=4)
    parser.add_argument("--trace", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.presses < 1:
        print("trace_press.py: --presses must be >= 1", file=sys.stderr)
        return 2
    if args.explorer < 0:
        print("trace_press.py: --explorer must be >= 0", file=sys.stderr)
        return 2
    if not args.notebook.is_file():
        print(f"trace_press.py: notebook {args.notebook} does not exist", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace or Path(tmp) / "trace.json"
        try:
            results = record(args.notebook.resolve(), args.explorer, args.presses, trace)
        except ValueError as exc:
            print(f"trace_press.py: {exc}", file=sys.stderr)
            return 2
        for k, (timing, rows) in enumerate(zip(results, main_thread_tasks(trace))):
            total = "—" if timing is None else f"{timing['total']:.0f} ms"
            print(f"press {k + 1}: key press to chart on screen {total}")
            for row in rows:
                parts = ", ".join(f"{n} {v:.1f}" for n, v in list(row["parts"].items())[:5])
                print(f"  +{row['start_ms']:6.1f} ms  task {row['dur_ms']:5.1f} ms  {parts}  {row['calls']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
