"""Shared by the model benchmarks: the best wall time of a few runs (the least disturbed one)."""

import time


def best_s(fn, repeats: int = 3) -> float:
    """Smallest wall time of ``repeats`` calls of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
