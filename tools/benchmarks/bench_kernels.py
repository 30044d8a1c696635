"""Chapter 08 model benchmarks: the NeuronCore emulator on a 4096 × 4096 × 4096 BF16 matmul.

Two targets from the chapter's issue: the emulator with its numerics (inputs rounded to BF16,
FP32 accumulation in PSUM, the result rounded to BF16) under 5 s, and its cost model alone
(traffic, memory checks and timeline, no values) under 50 ms. Best of a few repeats.

The numerics are dominated by numpy's own float32 matmul of the same size, so that matmul is
timed in the same run too: on a busy shared machine both slow down together, and the ratio
says how much the emulator adds. Set ``OPENBLAS_NUM_THREADS=1`` before running to measure
without BLAS threads competing for the cores with other processes.
"""

from __future__ import annotations

import time

from _timing import best_s  # tools/benchmarks/_timing.py (benchmark.py puts it on sys.path)

SIZE = 4096


def _best_s(fn, repeats: int) -> float:
    return best_s(fn, repeats)


def run() -> list[dict]:
    import numpy as np

    from trainium_lab import kernels

    rng = np.random.default_rng(0)
    a = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    b = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    cost_s = _best_s(lambda: kernels.matmul_cost(SIZE, SIZE, SIZE, dtype="bfloat16"), 5)
    emulated_s = _best_s(lambda: kernels.tiled_matmul(a, b, dtype="bfloat16"), 2)
    numpy_s = _best_s(lambda: a @ b, 2)
    return [
        {"name": f"kernels matmul_cost {SIZE}³ BF16 (cost model alone)", "value": cost_s * 1e3,
         "unit": "ms", "target": "< 50 ms"},
        {"name": f"kernels tiled_matmul {SIZE}³ BF16 (numerics included)", "value": emulated_s,
         "unit": "s", "target": "< 5 s"},
        {"name": f"numpy float32 matmul {SIZE}³, same run (reference)", "value": numpy_s,
         "unit": "s"},
        {"name": "emulator / numpy matmul", "value": emulated_s / numpy_s, "unit": "x"},
    ]


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']:<62} {row['value']:10.3f} {row['unit']:<3} {row.get('target', '')}")
