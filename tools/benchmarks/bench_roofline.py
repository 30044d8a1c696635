"""Model benchmarks for chapter 01: roofline bounds, tile utilisation, core counts, claims."""

from __future__ import annotations

import time


def _per_call_s(fn, calls: int, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def run() -> list[dict]:
    from trainium_lab import claim_checks, cores, roofline

    bound_s = _per_call_s(lambda: roofline.matmul_bound(260, 8192, 8192, "bf16", "trn2", tiled=True), 2000)
    curve_s = _per_call_s(lambda: roofline.roofline_curve("trn2", "bf16"), 200)
    sweep_s = _per_call_s(lambda: roofline.utilisation_curve(range(1, 521)), 5)
    counts_s = _per_call_s(lambda: cores.core_count_table("trn2-ultraserver", 2, 4), 200)
    claims_s = _per_call_s(claim_checks.claims_table, 5)
    return [
        {"name": "roofline matmul_bound (tiled)", "value": bound_s * 1e6, "unit": "µs",
         "target": "< 100 µs"},
        {"name": "roofline roofline_curve", "value": curve_s * 1e3, "unit": "ms", "target": "< 5 ms"},
        {"name": "roofline utilisation_curve, 520 shapes", "value": sweep_s * 1e3, "unit": "ms",
         "target": "< 50 ms"},
        {"name": "cores core_count_table", "value": counts_s * 1e3, "unit": "ms", "target": "< 10 ms"},
        {"name": "cores claims_table (9 claims)", "value": claims_s * 1e3, "unit": "ms",
         "target": "< 100 ms"},
    ]
