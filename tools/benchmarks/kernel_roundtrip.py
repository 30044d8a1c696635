#!/usr/bin/env python3
"""A slider's change through a real kernel, without a browser or a Jupyter server.

    .venv/bin/python tools/benchmarks/kernel_roundtrip.py [NAME ...] [--presses 10]

For each explorer registered with ``@benchmarked`` (names containing one of ``NAME``; all by
default) a kernel builds it, then its first slider gets ``--presses`` comm ``update`` messages on
the shell channel, as the page sends them, one step up each time (new values, never back). For
each the times from sending to the kernel's messages on IOPub are recorded: ``busy`` (the
kernel took the message), the chart's update (``_py_to_js_updates`` or ``spec``) and ``idle``.
Beside ``tools/benchmarks/browser.py`` this separates what the kernel spends from what the
Jupyter server and the page add: the browser's "kernel" part is busy → chart as the page
receives them. This is a benchmark, not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

SETUP = """
import importlib, pkgutil
import ipywidgets as W
import trainium_lab.widgets as _wp
from trainium_lab.widgets import base as _base
for _i in pkgutil.iter_modules(_wp.__path__):
    importlib.import_module(f"trainium_lab.widgets.{_i.name}")
def _first_slider(name):
    ex = _base.BENCHMARKS[name][0]()
    ex = getattr(ex, "explorer", ex)
    globals().setdefault("_keep", []).append(ex)
    sl = next((c for c in ex.controls.values() if isinstance(c, (W.IntSlider, W.FloatSlider))
               and not c.disabled), None)
    if sl is None or getattr(ex, "chart", None) is None:
        return None
    return [sl.comm.comm_id, sl.value, sl.step, sl.max, isinstance(sl, W.IntSlider)]
"""


def _run(kc, code: str) -> str:
    kc.execute(code)
    out = ""
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["msg_type"] == "stream":
            out += m["content"]["text"]
        elif m["msg_type"] == "error":
            raise RuntimeError("\n".join(m["content"]["traceback"][-3:]))
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return out


def measure(kc, name: str, presses: int) -> dict | None:
    info = json.loads(_run(kc, f"import json; print(json.dumps(_first_slider({name!r})))"))
    if info is None:
        return None
    comm_id, value, step, maximum, integer = info
    rows = []
    for _ in range(presses):
        value = value + step if value + step <= maximum else value - step
        msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {
            "method": "update", "state": {"value": int(value) if integer else value}, "buffer_paths": []}})
        t0 = time.perf_counter()
        kc.shell_channel.send(msg)
        busy = chart = None
        while True:
            m = kc.get_iopub_msg(timeout=60)
            t = (time.perf_counter() - t0) * 1e3
            if m["msg_type"] == "status":
                if m["content"]["execution_state"] == "busy":
                    busy = t
                else:
                    break
            elif m["msg_type"] == "comm_msg" and chart is None:
                state = m["content"]["data"].get("state") or {}
                if "_py_to_js_updates" in state or "spec" in state:
                    chart = t
        rows.append({"busy": busy, "chart": chart, "idle": t})
    med = lambda k: statistics.median(r[k] for r in rows if r[k] is not None) if any(
        r[k] is not None for r in rows) else None
    return {"name": name, "to_busy_ms": med("busy"), "to_chart_ms": med("chart"), "to_idle_ms": med("idle")}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--presses", type=int, default=10)
    args = parser.parse_args(argv)
    if args.presses < 1:
        print("kernel_roundtrip.py: --presses must be >= 1", file=sys.stderr)
        return 2
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        _run(kc, SETUP)
        names = json.loads(_run(kc, "import json; print(json.dumps(sorted(_base.BENCHMARKS)))"))
        names = [n for n in names if not args.names or any(a in n for a in args.names)]
        for name in names:
            r = measure(kc, name, args.presses)
            if r is None:
                continue
            busy, chart = r["to_busy_ms"], r["to_chart_ms"]
            print(f"{name:<40} send → busy {busy:5.1f} ms   busy → chart "
                  f"{(chart - busy) if chart is not None else float('nan'):5.1f} ms   "
                  f"send → idle {r['to_idle_ms']:5.1f} ms", flush=True)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
