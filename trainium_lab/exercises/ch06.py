"""Exercises for chapter 06 (failure modes).

The solution code of each exercise is the single source of its answer: the checker runs it
(with the model modules, the ``units`` names, ``math`` and ``np`` in scope). Q3-Q5 ask for the
cause of a trace the chapter draws, as one of the listed phrases; a wrong choice gets feedback
aimed at the confusion it comes from.
"""

from __future__ import annotations

from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "ALL", "CAUSES"]

#: the phrases Q3-Q5 accept (each question lists the ones that apply)
CAUSES = ("checkpoint write", "shape recompile", "slow rank", "device error",
          "mismatched collective", "cold compile cache", "checkpoint load", "deep health check")

q1 = Exercise(
    "Q1 checkpoint write time",
    unit="s",
    hint=("A checkpoint holds the BF16 weights, the FP32 master copy and Adam's two moments "
          "(bytes per parameter?), not the gradients. The file system writes 125 MB/s for each "
          "TiB of storage it has, and AWS counts 1,000 GiB as one TiB here (its 2.4 TiB is "
          "2,400 GiB)."),
    solution=("n_params = 8e9                       # Llama 3 8B\n"
              "bytes_per_param = 2 + 4 + 4 + 4      # weights, master, Adam m, v; no gradients\n"
              "state = n_params * bytes_per_param   # 112e9 bytes = 112 GB\n"
              "bandwidth = 12_000 / 1000 * 125 * MB # 12,000 GiB = AWS's 12 TiB, x 125 MB/s per TiB = 1.5 GB/s\n"
              "answer_1 = state / bandwidth         # seconds the synchronous write blocks"),
    mistakes=[(8e9 * 16 / 1.5e9, "you counted the gradients: they are recomputed every step and "
                                 "not saved, so a checkpoint is 14 bytes per parameter, not 16"),
              (8e9 * 14 / (12 * 125 * 2**20), "you took MB as 2^20 bytes; the course reads "
                                              "AWS's MB/s per TiB as 10^6 bytes per second"),
              (8e9 * 14 / 125e6, "125 MB/s is per TiB of storage: a 12,000 GiB (AWS's 12 TiB) file "
                                 "system writes 12 times as fast"),
              (8e9 * 14 / (12_000 / 1024 * 125e6), "AWS's TiB of FSx storage is 1,000 GiB (it "
                                                   "calls 2,400 GiB 2.4 TiB): 12,000 GiB is 12 "
                                                   "of them, not 11.7")],
)

q2 = Exercise(
    "Q2 lost share by the rule of thumb",
    unit="%",
    hint=("At Young's interval the writing share and the rework share are equal, each "
          "sqrt(delta / 2M), so together sqrt(2 delta / M); every failure also costs the restart, "
          "R / M of the time."),
    solution=("delta, restart, mtbf = 4 * minute, 12 * minute, 8 * hour\n"
              "write_and_rework = math.sqrt(2 * delta / mtbf)   # the two equal halves, 12.9 %\n"
              "restarts = restart / mtbf                        # one restart per failure, 2.5 %\n"
              "answer_2 = 100 * (write_and_rework + restarts)   # percent of wall time"),
    mistakes=[(100 * (2 * 240 / 28800) ** 0.5, "you left out the restarts: each failure also "
                                                "costs R, which is R / M of the wall time"),
              (100 * ((240 / (2 * 28800)) ** 0.5 + 720 / 28800),
               "sqrt(delta / 2M) is only one of the two equal halves (writing, or rework); the "
               "optimum loses both"),
              ((2 * 240 / 28800) ** 0.5 + 720 / 28800, "that is the fraction; the answer is "
                                                       "asked in percent")],
)

q3 = Exercise(
    "Q3 trace A: periodic spikes",
    unit="cause",
    hint=("Look at how often the spikes come, whether they ever stop, and how tall they are. "
          "What does the job do every few hundred steps, for the same time each time?"),
    solution=("# Spikes every 426 steps, all the same height, for as long as the job runs:\n"
              "# a blocking write of the same checkpoint at a fixed interval. The height is\n"
              "# bytes / bandwidth: 70e9 x 14 B / 12 GB/s = 82 s on top of a 17.9 s step.\n"
              "answer_3 = 'checkpoint write'"),
    mistakes=[("shape recompile", "a new shape compiles once and the cache keeps it (chapter 07): "
                                  "it spikes the first time the shape appears, not every 426 "
                                  "steps for ever, and not always by the same 82 s"),
              ("slow rank", "a slow rank makes every step slower (the others wait for it at "
                            "each collective); here 425 steps in 426 are normal"),
              ("device error", "a device error stops the job; this one keeps going")],
)

q4 = Exercise(
    "Q4 trace B: the job stops",
    unit="cause",
    hint=("Which rank behaves differently, and what does the chart say it is doing? What are "
          "all the others doing, and until when?"),
    solution=("# Rank 5 exits with a device error in the middle of step 4. Every other rank\n"
              "# finishes its compute, joins the all-reduce and blocks: a collective completes\n"
              "# only when every rank joins, so they wait until the timeout, and the job dies.\n"
              "answer_4 = 'device error'"),
    mistakes=[("mismatched collective", "with mismatched collectives every rank stays alive, "
                                        "blocked (one of them in a different collective); "
                                        "here rank 5 has exited with a device error"),
              ("slow rank", "a slow rank arrives late but arrives: the others wait seconds, "
                            "not until the timeout, and the next step starts"),
              ("checkpoint write", "a checkpoint blocks every rank for the same short time and "
                                   "the job goes on")],
)

q5 = Exercise(
    "Q5 trace C: every restart is slow",
    unit="cause",
    hint=("Follow one restart along the time axis: failure, job started, checkpoint loaded, "
          "then what? Which phase takes the time, and does it also appear at the very first "
          "start?"),
    solution=("# After every restart the log says 'checkpoint loaded' within a minute and a\n"
              "# half, then no step completes for 20 minutes: the same stall as at the first\n"
              "# start. The restarted processes compile every graph again: the compile cache\n"
              "# did not survive (per-node /var/tmp, lost with the container or the node).\n"
              "answer_5 = 'cold compile cache'"),
    mistakes=[("checkpoint load", "the log prints 'checkpoint loaded' 82 s after the job starts; "
                                  "the long flat part comes after that line"),
              ("deep health check", "a health check runs before the job starts again (between "
                                    "the failure and 'job started'); the stall here is after "
                                    "the checkpoint is loaded"),
              ("shape recompile", "no new shape appears: the same graph compiles at every "
                                  "start, because nothing kept the first compile")],
)

q6 = Exercise(
    "Q6 spares for a 32,768-chip job",
    unit="spare nodes",
    hint=("Job MTBF M from the Llama 3 per-GPU proxy over 32,768 chips; a used spare is away for "
          "T = 20 min + the deep health check. Spares away at a random moment are Poisson with "
          "mean T / M; find the smallest k with P(Poisson >= k) < 1 %."),
    solution=("mtbf = reliability.llama3_summary().per_gpu_mtbf_s / 32_768    # s (5,570 s)\n"
              "turnaround = 20 * minute + reliability.deep_health_check_s()   # s (2 h 20 min)\n"
              "mean_away = turnaround / mtbf                # spares away on average, about 1.5\n"
              "k, tail = 0, 1.0                             # tail = P(Poisson >= k)\n"
              "while tail >= 0.01:\n"
              "    tail -= math.exp(-mean_away) * mean_away**k / math.factorial(k)\n"
              "    k += 1\n"
              "answer_6 = k"),
    mistakes=[(2, "two spares cover the average number away (T / M is about 1.5), but the pool "
                  "runs dry whenever failures bunch up: almost half of all failures would find none"),
              (5, "five spares leave about 2 % of failures without one; the question asks "
                  "for under 1 %"),
              (3, "three spares keep the pool from running dry only about 80 % of the time")],
)

q7 = Exercise(
    "Q7 the price of a collective timeout",
    unit="percentage points",
    hint=("A hang lasts until it is detected, once per failure; failures come every M on "
          "average. Compare the two detection times, as a share of M."),
    solution=("mtbf = 12 * hour\n"
              "timeout, agent = 30 * minute, 1 * minute   # collective timeout vs health agent\n"
              "answer_7 = 100 * (timeout - agent) / mtbf  # each failure waits once: R / M"),
    mistakes=[(100 * 30 / 720, "that is the whole timeout; with the agent the job still waits "
                               "1 minute, so the saving is 29 minutes per failure"),
              ((30 - 1) / 720, "that is the fraction; the answer is asked in percentage points")],
)



def _q8_setup() -> tuple[float, float, float]:
    """(δ, M, R) in seconds for Q8: Llama 3 70B at 20 GB/s on 1,024 chips, 5-minute restarts."""
    from trainium_lab import reliability as rel
    from trainium_lab.units import GB, minute

    d = rel.checkpoint_write_s(rel.checkpoint_bytes(70e9), 20 * GB)
    return d, rel.job_mtbf_s(rel.llama3_summary().per_gpu_mtbf_s, 1024), 5 * minute


def _q8_check(answer, expected):
    """Accept any interval whose lost share is within 10 % of the optimum's."""
    from trainium_lab import reliability as rel
    from trainium_lab.units import minute

    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not answer > 0 or answer > 1e6:
        return False, f"expected a positive number of minutes, got {answer!r}"
    d, m, r = _q8_setup()
    if answer * minute <= d:
        return False, f"{answer:.3g} min is no longer than the {d:.0f} s write itself"
    best = rel.lost_fraction(rel.optimal_interval_s(d, m), d, m, r)
    lost = float(rel.lost_fraction(answer * minute, d, m, r))
    if lost > 1.1 * best:
        side = "often" if answer * minute < rel.optimal_interval_s(d, m) else "rarely"
        return False, (f"every {answer:.3g} min loses {lost:.1%} against {best:.1%} at the optimum: it checkpoints "
                       f"too {side}")
    return True, ""


q8 = Exercise(
    "Q8 a checkpoint interval for 70B on 16 UltraServers (open)",
    unit="min",
    open_variant=True,
    checker=_q8_check,
    also_accepted=(lambda: 0.8 * run_solution(q8._solution), lambda: 1.3 * run_solution(q8._solution)),
    hint=("δ = 70e9 × 14 B ÷ 20 GB/s; M = the Llama 3 proxy's per-chip MTBF ÷ 1,024 chips; Young's interval "
          "√(2δM) is close to the optimum, and anything near it loses about as little."),
    solution=("d = reliability.checkpoint_write_s(reliability.checkpoint_bytes(70e9), 20 * GB)   # s\n"
              "m = reliability.job_mtbf_s(reliability.llama3_summary().per_gpu_mtbf_s, 1024)    # s\n"
              "answer_8 = reliability.optimal_interval_s(d, m) / minute                        # minutes"),
    mistakes=[(lambda: _q8_young() / 60, "that is the interval in hours: the question asks for minutes"),
              (lambda: _q8_young_chip_mtbf(), "that uses one chip's MTBF: a job on 1,024 chips fails 1,024 "
                                              "times as often"),
              (lambda: _q8_setup()[0] / 60, "that is the write time δ itself: checkpointing that often does "
                                            "nothing but write")],
)


def _q8_young() -> float:
    from trainium_lab import reliability as rel

    d, m, _ = _q8_setup()
    return rel.young_interval_s(d, m) / 60


def _q8_young_chip_mtbf() -> float:
    from trainium_lab import reliability as rel

    d, _, _ = _q8_setup()
    return rel.young_interval_s(d, rel.llama3_summary().per_gpu_mtbf_s) / 60


ALL = (q1, q2, q3, q4, q5, q6, q7, q8)
