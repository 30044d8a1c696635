#!/usr/bin/env python3
"""What a learner waits for in the browser: from a key press on a control to the changed chart
on screen, per chapter, in JupyterLab in headless Chromium.

    .venv/bin/python tools/benchmarks/browser.py [notebooks/NN_x.ipynb ...] [--presses 8] [--json]
    python3 tools/course.py bench --browser        # the same, after the kernel-side benchmark

For each notebook: open it in JupyterLab (the browser test's server, ``tests/test_browser.py``,
with JupyterLab's default notebook windowing, as a learner has it),
clear the outputs, run all cells, then in every explorer that draws a chart, press a key on its
first slider that redraws the chart (ArrowRight to new values, ArrowLeft from its maximum on;
never back to a value just shown, so no explorer's memory of earlier results is timed; an
explorer without such a slider: the next option of its first menu) ``--presses`` times; a
control whose change does not redraw the chart (a search form's input) is passed over. Each
time is from the ``keydown`` (or ``change``) event in the page to the first animation frame after the chart's SVG differs: the kernel round trip, the
widget messages and Vega's redraw. Reported: the median and worst per chapter; the course's
target is a median of at most 50 ms (issue 30). ``TRAINIUM_LAB_FULL_CHART_UPDATES=1`` makes the
explorers send their whole spec on every update (the old way) for comparison.

Where the time goes, from the page's websocket (each press, medians reported):

* ``to kernel``: key press to the kernel's first reply (its "busy" status): the page, the
  Jupyter server and the kernel waking up, none of it the course's code; split into ``page``
  (key press to the page sending its comm message) and ``trip`` (that message to "busy");
* ``kernel``: from "busy" to the chart's update message (the callback: model, chart, spec);
* ``draw``: from that message to the chart's SVG changed (Vega swapping the data);
* ``frame``: from the SVG change to the next animation frame (the paint).

A **baseline** is measured first and last: a plain ipywidgets slider whose callback sets a text
label, in a notebook of its own (no course code, no chart) — what JupyterLab's round trip costs
on this machine at this load. The load average is printed with each chapter. On a machine shared
with other work the ``to kernel`` share grows with the load; compare chapters with the baseline.

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

# Timestamps of the page's websocket frames (installed before JupyterLab loads): the first comm
# message the page sends, the kernel's "busy" status and the first comm update that carries a
# chart's data.
WEBSOCKET_JS = r"""
(() => {
  window.__tlFrames = [];
  const Native = window.WebSocket;
  const head = (data) => {  // a frame's first 3,000 characters, whether text or binary
    if (typeof data === 'string') return data.slice(0, 3000);
    if (data instanceof ArrayBuffer) data = new Uint8Array(data);
    if (!ArrayBuffer.isView(data)) return '';
    return new TextDecoder().decode(new Uint8Array(data.buffer, data.byteOffset,
                                                   Math.min(data.byteLength, 3000)));
  };
  class Timed extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        const t = performance.now();
        const text = head(e.data);
        const kind = /"execution_state":\s*"busy"/.test(text) ? 'busy'
          : /_py_to_js_updates|"spec"/.test(text) ? 'chart' : '';
        if (kind) window.__tlFrames.push([kind, t]);
      });
    }
    send(data) {
      const t = performance.now();
      if (/"comm_msg"/.test(head(data))) window.__tlFrames.push(['sent', t]);
      return super.send(data);
    }
  }
  window.WebSocket = Timed;
})();
"""

# Arm a one-shot timer: t0 at the trigger event, the result at the first frame after the chart's
# SVG changed (a MutationObserver on the explorer: ``sel`` is its selector), or null after 5 s.
ARM_JS = r"""
([sel, trigger, target]) => {
  const ex = document.querySelector(sel);
  const fp = () => { const s = ex.querySelector(target); return s ? s.innerHTML : ''; };
  const before = fp();
  window.__tlResult = undefined;
  window.__tlFrames = [];
  let t0 = null;
  const start = (e) => { if (t0 === null) t0 = performance.now(); };
  document.addEventListener(trigger, start, {capture: true, once: true});
  const obs = new MutationObserver(() => {
    if (t0 === null || fp() === before) return;
    obs.disconnect();
    const drawn = performance.now();
    requestAnimationFrame(() => {
      const end = performance.now();
      const first = (k) => { const f = window.__tlFrames.find(f => f[0] === k && f[1] >= t0); return f ? f[1] - t0 : null; };
      window.__tlResult = {total: end - t0, sent: first('sent'), busy: first('busy'), chart: first('chart'),
                           drawn: drawn - t0};
    });
  });
  obs.observe(ex, {subtree: true, childList: true, attributes: true, characterData: true});
  setTimeout(() => { obs.disconnect(); if (window.__tlResult === undefined) window.__tlResult = null; }, 5000);
}
"""

#: the baseline: JupyterLab's own round trip, a slider whose Python callback sets a label
BASELINE_SOURCE = """import ipywidgets as W
s = W.IntSlider(value=10, min=0, max=100, description="x")
out = W.Label(value="x = 10")
s.observe(lambda ch: setattr(out, "value", f"x = {ch['new']}"), names="value")
box = W.VBox([s, out])
box.add_class("tl-baseline")
box"""


def _load_browser_test():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_browser  # the JupyterLab server and page helpers of the browser test

    return test_browser


def _press(tb, page, handle, k: int, sel: str, target: str, going: dict) -> dict | None:
    """One key press on a slider's handle, timed. The slider moves one way to values it has not
    shown yet (ArrowRight, or ArrowLeft once it sits at its maximum), never back and forth: an
    explorer may keep what it computed, and a learner moving on asks for new values."""
    at_max = handle.evaluate("h => h.getAttribute('aria-valuenow') !== null && "
                             "Number(h.getAttribute('aria-valuenow')) >= Number(h.getAttribute('aria-valuemax'))")
    handle.focus()
    page.evaluate(ARM_JS, [sel, "keydown", target])
    going["left"] = going.get("left", False) or at_max  # from the maximum on, keep going left
    handle.press("ArrowLeft" if going["left"] else "ArrowRight")
    page.wait_for_function("() => window.__tlResult !== undefined", timeout=10_000)
    return page.evaluate("() => window.__tlResult")


def new_page(lab, context):
    """A page of ``context`` that reaches only the JupyterLab server ``lab`` (no network)."""
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        (f"{lab.base}/", "data:", "blob:")) else route.abort())
    return page


def run_all(tb, lab, page, name: str) -> None:
    """Open notebook ``name`` of ``lab`` in ``page``, clear its outputs, run all its cells and
    wait until the last has run and its widgets have settled."""
    page.goto(lab.url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    lab.wait_kernel_idle(name, page)
    tb._menu(page, "Edit", "editmenu:clear-all")
    tb._menu(page, "Run", "runmenu:run-all")
    page.wait_for_function(tb.ALL_RAN_JS, timeout=tb.RUN_ALL_TIMEOUT_MS)
    page.wait_for_timeout(1500)


def measure_notebook(tb, lab, context, path: Path, presses: int, baseline: bool = False) -> list[dict]:
    """Slider-to-chart times (ms, with their parts) of every explorer with a chart in one
    notebook; ``baseline``: the notebook is :data:`BASELINE_SOURCE`'s."""
    import shutil

    if baseline:
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(BASELINE_SOURCE)]
        nbformat.write(nb, lab.root / path.name)
    else:
        shutil.copy2(path, lab.root / path.name)
    page = new_page(lab, context)
    times: list[dict] = []
    try:
        run_all(tb, lab, page, path.name)
        if baseline:
            page.wait_for_selector(".tl-baseline .noUi-handle", timeout=30_000)
            handle = page.query_selector(".tl-baseline .noUi-handle")
            going: dict = {}
            for k in range(presses):
                page.wait_for_timeout(150)
                result = _press(tb, page, handle, k, ".tl-baseline", ".widget-label:not(.widget-hslider *)",
                                going)
                if result is not None:
                    times.append(result)
            return times
        explorers = page.evaluate(tb.CONTROLS_JS)
        for i, controls in enumerate(explorers):
            ex = page.query_selector(f'.tl-explorer[data-tl-index="{i}"]')
            if not ex.query_selector("svg.marks"):
                continue
            usable = [c for c in controls if not c["disabled"]]
            # the first slider (else menu) whose change redraws the chart: a search form's input
            # only dims the view until its button is clicked, so it is passed over
            candidates = [c for c in usable if c["kind"] == "slider"] + \
                [c for c in usable if c["kind"] == "select"]
            ex.scroll_into_view_if_needed()
            sel = f'.tl-explorer[data-tl-index="{i}"]'
            for control in candidates:
                going: dict = {}
                got = 0
                for k in range(presses):
                    el = tb._control(page, control["id"])
                    tb._settle(page, i)
                    if control["kind"] == "slider":
                        result = _press(tb, page, el.query_selector(".noUi-handle"), k, sel, "svg.marks",
                                        going)
                    else:
                        select = el.query_selector("select")
                        options = select.evaluate("s => [...s.options].map(o => o.value)")
                        current = select.evaluate("s => s.selectedIndex")
                        page.evaluate(ARM_JS, [sel, "input", "svg.marks"])
                        select.select_option(options[(current + 1) % len(options)])
                        page.wait_for_function("() => window.__tlResult !== undefined", timeout=10_000)
                        result = page.evaluate("() => window.__tlResult")
                    if result is None and k == 0:
                        break  # this control does not redraw the chart: try the next one
                    if result is not None:
                        times.append(result)
                        got += 1
                if got:
                    break
    finally:
        page.close()
        lab.shutdown_kernels()
    return times


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _summary(times: list[dict]) -> dict:
    """Median and worst total, and the median of each part (see the module's docstring)."""
    total = [t["total"] for t in times]
    parts = {"to_kernel_ms": [t["busy"] for t in times if t["busy"] is not None],
             "page_ms": [t["sent"] for t in times if t.get("sent") is not None],
             "trip_ms": [t["busy"] - t["sent"] for t in times
                         if t.get("sent") is not None and t["busy"] is not None],
             "kernel_ms": [t["chart"] - t["busy"] for t in times
                           if t["busy"] is not None and t["chart"] is not None],
             "draw_ms": [t["drawn"] - t["chart"] for t in times if t["chart"] is not None],
             "frame_ms": [t["total"] - t["drawn"] for t in times]}
    return {"median_ms": _median(total), "worst_ms": max(total) if total else None,
            "best_ms": min(total) if total else None,
            **{k: _median(v) for k, v in parts.items()}}


def _line(row: dict, baseline: bool) -> str:
    def ms(x):
        return "   —" if x is None else f"{x:4.0f}"
    flag = "" if baseline or row["median_ms"] is None or row["median_ms"] <= TARGET_MS else "  ABOVE TARGET"
    parts = f"to kernel {ms(row['to_kernel_ms'])} (page {ms(row['page_ms'])}, trip {ms(row['trip_ms'])})"
    if not baseline:
        parts += f", kernel {ms(row['kernel_ms'])}, draw {ms(row['draw_ms'])}, frame {ms(row['frame_ms'])}"
    return (f"{row['chapter']:<28} median {ms(row['median_ms'])} ms  best {ms(row['best_ms'])}  "
            f"worst {ms(row['worst_ms'])}  ({row['n']} presses; {parts}; load {row['load_1min']:.1f})"
            f"{flag}")


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
    baseline = Path("baseline_slider_label.ipynb")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        # JupyterLab's default windowing, as a learner has it (the browser test renders
        # every cell at once, which makes each layout of the page slower)
        lab = tb.Lab(Path(tmp), windowing_mode=None)
        try:
            chromium = pw.chromium.launch(executable_path=str(tb.CHROMIUM), args=tb.CHROMIUM_ARGS)
            context = chromium.new_context(viewport={"width": 1440, "height": 900})
            context.add_init_script(WEBSOCKET_JS)
            for path in [baseline, *paths, baseline]:
                start, load = time.monotonic(), os.getloadavg()[0]
                is_base = path is baseline
                times = measure_notebook(tb, lab, context, path if is_base else path.resolve(),
                                         2 * args.presses if is_base else args.presses, baseline=is_base)
                row = {"chapter": "baseline (slider → label)" if is_base else path.stem,
                       "n": len(times), "load_1min": load, "wall_s": time.monotonic() - start,
                       **_summary(times)}
                rows.append(row)
                if not args.json:
                    print(_line(row, is_base), flush=True)
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
