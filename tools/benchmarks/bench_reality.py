"""Model benchmark for issues 24 and 38: every published measurement beside its bound and
expectation, with the out-of-sample refits (compare() and summary())."""

from __future__ import annotations

import time


def _clear(reality) -> None:
    reality._compare.cache_clear()              # time the comparison itself, not its caches
    reality._cross_validation.cache_clear()
    reality._without_set.cache_clear()
    reality._row_candidates.cache_clear()


def run() -> list[dict]:
    from trainium_lab import reality

    best = float("inf")
    for _ in range(3):
        _clear(reality)
        start = time.perf_counter()
        reality.compare()
        reality.summary()
        best = min(best, time.perf_counter() - start)
    return [{"name": "reality compare + summary (every measurement, with the out-of-sample refits, uncached)",
             "value": best * 1e3, "unit": "ms", "target": "< 1000 ms"}]


if __name__ == "__main__":
    import subprocess
    import sys

    # cold: a fresh interpreter, import included, nothing cached
    code = ("import time; t = time.perf_counter(); from trainium_lab import reality; reality.compare(); "
            "reality.summary(); print(f'{(time.perf_counter() - t) * 1e3:.0f} ms cold (import included)')")
    print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip())
    for r in run():
        print(f"{r['name']}: {r['value']:.0f} {r['unit']} ({r['target']})")
