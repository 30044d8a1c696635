"""Model benchmarks for chapter 06: Monte Carlo throughput and the lost-time curve."""

from __future__ import annotations

import time


def _best_of(fn, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run() -> list[dict]:
    from trainium_lab import reliability as rel
    from trainium_lab.units import day, hour

    n_runs = 100_000
    tau = rel.young_interval_s(90, 24 * hour)
    # Young's case (90 s checkpoint, 24 h MTBF) plus a 10 min restart, 30 days of work per run:
    # about 31 failures per run
    mc_s = _best_of(lambda: rel.simulate_runs(tau, 90, 24 * hour, 600, work_s=30 * day,
                                              n_runs=n_runs, seed=0))
    # a Llama-3-like MTBF (3.1 h) and the same 30 days: about 250 failures per run
    m = rel.llama3_summary().mean_time_between_interruptions_s
    tau_l = rel.young_interval_s(90, m)
    mc_l_s = _best_of(lambda: rel.simulate_runs(tau_l, 90, m, 600, work_s=30 * day,
                                                n_runs=n_runs, seed=0), rounds=1)
    curve_s = _best_of(lambda: rel.lost_time_curve(90, 24 * hour, 600), rounds=20)
    return [
        {"name": "reliability Monte Carlo, 100k runs x 30 days, MTBF 24 h",
         "value": n_runs / mc_s, "unit": "runs/s", "target": "> 1e5 runs/s (100k runs in ~1 s)"},
        {"name": "reliability Monte Carlo, 100k runs x 30 days, MTBF 3.1 h",
         "value": n_runs / mc_l_s, "unit": "runs/s"},
        {"name": "reliability lost_time_curve (60 intervals)", "value": curve_s * 1e3,
         "unit": "ms", "target": "< 10 ms"},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
