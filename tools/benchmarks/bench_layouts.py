"""Model benchmarks for chapter 05: the layout planner for Llama 3 405B on 128, 512 and
1,024 Trn2 chips (2, 8 and 16 UltraServers at LNC=2), cold (collective costs not yet
cached) and warm."""

from __future__ import annotations

import time


def run() -> list[dict]:
    from trainium_lab import layouts

    rows = []
    for n_systems in (2, 8, 16):
        kwargs = dict(system="trn2-ultraserver", n_systems=n_systems, lnc=2, global_batch=2048)
        layouts._comm.cache_clear()
        start = time.perf_counter()
        p = layouts.plan("llama3-405b", **kwargs)
        cold = time.perf_counter() - start
        warm = min(_timed(lambda: layouts.plan("llama3-405b", **kwargs)) for _ in range(3))
        chips = p.cluster.n_chips
        rows.append({"name": f"layouts.plan 405B on {chips} chips ({len(p.all)} layouts, cold)",
                     "value": cold, "unit": "s", "target": "< 1 s"})
        rows.append({"name": f"layouts.plan 405B on {chips} chips (warm cache)", "value": warm, "unit": "s",
                     "target": "< 1 s"})
    return rows


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']:<60} {row['value']:.3f} {row['unit']}  (target {row['target']})")
