"""Chapter 02 model benchmarks: stochastic rounding against the ml_dtypes cast.

Stochastic rounding of 10 million float32 values, as a ratio to the ml_dtypes
round-to-nearest cast of the same array measured in the same run (best of a few
repeats each, so a busy machine slows both alike). Plus the two experiments.
"""

from __future__ import annotations

import time

from _timing import best_s  # tools/benchmarks/_timing.py (benchmark.py puts it on sys.path)

N = 10_000_000


def _best_s(fn, repeats: int = 5) -> float:
    return best_s(fn, repeats)


def run() -> list[dict]:
    import ml_dtypes
    import numpy as np

    from trainium_lab import numerics

    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    rows: list[dict] = []
    for name in ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"):
        dt = np.dtype(getattr(ml_dtypes, name, name))
        rng = np.random.default_rng(1)
        cast_s = _best_s(lambda: x.astype(dt))
        nearest_s = _best_s(lambda: numerics.round_to(x, name))
        sr_s = _best_s(lambda: numerics.round_to(x, name, "stochastic", rng=rng))
        label = numerics.LABELS[name]
        rows += [
            {"name": f"ml_dtypes cast to {label}, 10M float32", "value": cast_s * 1e3, "unit": "ms"},
            {"name": f"round_to {label} nearest (cast and back to float32), 10M",
             "value": nearest_s * 1e3, "unit": "ms"},
            {"name": f"round_to {label} stochastic, 10M", "value": sr_s * 1e3, "unit": "ms"},
            {"name": f"{label} stochastic / ml_dtypes cast", "value": sr_s / cast_s, "unit": "x",
             **({"target": "< 5"} if name == "bfloat16" else {})},
        ]
    t = _best_s(lambda: numerics.repeated_updates(1e-4, 1000, "bfloat16", "stochastic"), 3)
    rows.append({"name": "repeated updates, 10,000 BF16 weights x 1,000 steps, stochastic",
                 "value": t, "unit": "s", "target": "< 1"})
    t = _best_s(lambda: numerics.train_linear_regression(0.01, 1000), 3)
    rows.append({"name": "training experiment, 4 variants x 1,000 steps", "value": t, "unit": "s",
                 "target": "< 1"})
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']:<70} {row['value']:10.3f} {row['unit']:<3} {row.get('target', '')}")
