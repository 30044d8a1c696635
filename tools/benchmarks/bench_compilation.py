"""Chapter 07 model benchmarks: the exact optimal-bucket DP on a million lengths.

Issue 16's target: ``optimal_buckets`` on 1,000,000 lengths with 8 buckets under 1 s.
Two cases: a realistic corpus (seeded log-normal lengths up to 8,192 tokens, ~8k
distinct lengths) and a worst case for the DP (uniform lengths 1..131,072, ~131k
distinct lengths). Best of a few repeats, so a busy machine does not decide it.
"""

from __future__ import annotations

import time

from _timing import best_s  # tools/benchmarks/_timing.py (benchmark.py puts it on sys.path)


def _best_s(fn, repeats: int = 3) -> float:
    return best_s(fn, repeats)


def run() -> list[dict]:
    import numpy as np

    from trainium_lab import compilation as comp

    corpus = comp.synthetic_lengths(1_000_000, max_tokens=8192, seed=0)
    uniform = np.random.default_rng(0).integers(1, 131_073, size=1_000_000)
    hist = comp.length_histogram("wikipedia-bert-512")
    return [
        {"name": "optimal_buckets, 1M log-normal lengths (max 8192), 8 buckets",
         "value": _best_s(lambda: comp.optimal_buckets(corpus, 8)), "unit": "s", "target": "< 1 s"},
        {"name": "optimal_buckets, 1M uniform lengths 1..131072 (131k distinct), 8 buckets",
         "value": _best_s(lambda: comp.optimal_buckets(uniform, 8)), "unit": "s", "target": "< 1 s"},
        {"name": "optimal_buckets_by_count, Wikipedia histogram (16.3M sequences), 1..16 buckets",
         "value": _best_s(lambda: comp.optimal_buckets_by_count(hist.n_tokens, 16,
                                                                 counts=hist.n_sequences)) * 1e3,
         "unit": "ms"},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
