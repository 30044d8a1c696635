"""Model benchmarks for chapter 10: the full layout search (tp × ep × pp × dp × virtual stages ×
ZeRO × micro-batch × recompute) for a dense 405B and a mixture-of-experts model (Qwen3-235B-A22B)
on Trainium2 clusters from one instance (16 chips) to about 100,000 chips (UltraServers joined by
EFA), cold: the collective-cost and placement caches are cleared before each search. The largest
search is also run once in a fresh interpreter (after its imports), where nothing is warm."""

from __future__ import annotations

import subprocess
import sys
import time

#: (system, n_systems, global batch in sequences): one instance up to 1,600 UltraServers
CLUSTERS = (("trn2.48xlarge", 1, 64), ("trn2-ultraserver", 1, 256), ("trn2-ultraserver", 16, 1024),
            ("trn2-ultraserver", 256, 4096), ("trn2-ultraserver", 1536, 8192),
            ("trn2-ultraserver", 1600, 6400))
MODELS = ("llama3-405b", "qwen3-235b-a22b")
VIRTUAL_STAGES = (1, 2, 4)
TARGET_S = 1.0

_FRESH = """
import time
from trainium_lab import layouts
t = time.perf_counter()
p = layouts.plan({model!r}, system={system!r}, n_systems={n}, lnc=2, global_batch={batch},
                 virtual_stages={vs!r})
print(time.perf_counter() - t, len(p.all), bool(p.best is not None and p.best.fits))
"""


def _cold_plan(model: str, system: str, n: int, batch: int):
    from trainium_lab import layouts, topology

    layouts._comm.cache_clear()
    topology._spans.cache_clear()
    start = time.perf_counter()
    p = layouts.plan(model, system=system, n_systems=n, lnc=2, global_batch=batch,
                     virtual_stages=VIRTUAL_STAGES)
    return time.perf_counter() - start, p


def run() -> list[dict]:
    rows = []
    for model in MODELS:
        for system, n, batch in CLUSTERS:
            elapsed, p = _cold_plan(model, system, n, batch)
            best = p.best
            verdict = "nothing fits" if best is None else f"best fits: {best.label}"
            rows.append({"name": f"layouts.plan {model} on {p.cluster.n_chips:,} chips, batch {batch} "
                                 f"({len(p.all):,} layouts, cold; {verdict})",
                         "value": elapsed, "unit": "s", "target": f"< {TARGET_S:g} s",
                         "ok": elapsed < TARGET_S, "layouts": len(p.all), "fits": best is not None})
    for model in MODELS:
        system, n, batch = CLUSTERS[-2]
        code = _FRESH.format(model=model, system=system, n=n, batch=batch, vs=VIRTUAL_STAGES)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        elapsed, count, fits = out.split()
        rows.append({"name": f"layouts.plan {model} on {n * 64:,} chips in a fresh interpreter "
                             f"({int(count):,} layouts; best fits: {fits})",
                     "value": float(elapsed), "unit": "s", "target": f"< {TARGET_S:g} s",
                     "ok": float(elapsed) < TARGET_S, "layouts": int(count), "fits": fits == "True"})
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']:<118} {row['value']:.3f} {row['unit']}  (target {row['target']})")
