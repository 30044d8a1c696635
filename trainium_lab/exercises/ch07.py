"""Exercises for chapter 07 (compilation and static shapes).

The solution code of each exercise is the single source of its answer: the checker
runs it (with the model modules, the ``units`` names, ``math`` and ``np`` in scope).
"""

from __future__ import annotations

from trainium_lab.exercises import Exercise, run_solution

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "ALL"]

q1 = Exercise(
    "Q1 padding with two buckets",
    unit="%",
    hint=("Every length from 1 to 512 occurs once. Count the computed tokens (each sequence "
          "padded to its bucket) and the real tokens; padding is their difference over the "
          "computed tokens."),
    solution=("real = 512 * 513 / 2             # tokens: 1 + 2 + ... + 512\n"
              "padded = 256 * 256 + 256 * 512   # lengths 1..256 -> 256, 257..512 -> 512\n"
              "answer_1 = 100 * (padded - real) / padded   # percent of computed tokens"),
    mistakes=[(49.9, "that is one bucket of 512 (262,144 computed tokens); with two, the short "
                     "half is padded only to 256"),
              (0.332, "that is the fraction; the answer is asked in percent")],
)

q2 = Exercise(
    "Q2 programs of a bucketed run in three epochs",
    unit="compiles",
    rel_tol=0.0,
    hint=("A process compiles each distinct (batch size, sequence length) once. With length grouping every "
          "bucket has full batches and its own smaller last batch; later epochs reuse them."),
    solution=("lengths = compilation.synthetic_lengths(6_000, max_tokens=512, seed=3)\n"
              "run = compilation.step_stream(6_000, 48, lengths=lengths, buckets=(64, 128, 256, 512),\n"
              "                              group_by_length=True, n_epochs=3)\n"
              "answer_2 = compilation.run_compiles(run, compile_s=1.0).n_graphs   # full + last batch per bucket"),
    mistakes=[(4, "one program per bucket counts only the full batches: each bucket also ends in a smaller "
                  "last batch, another shape"),
              (lambda: 3 * run_solution(q2._solution), "epochs 2 and 3 trace the same shapes: the in-memory "
                                                       "cache already holds them"),
              (5, "with length grouping every bucket, not only the last one, has its own short last batch")],
)

q3 = Exercise(
    "Q3 the rewrite that removes the cut",
    hint=("The cut comes from asking the host for a value mid-step. Which rewrite keeps the decision on "
          "the device, so the whole step stays one graph?"),
    solution=("# (a) moves `loss.item()` after the optimizer step: still a host read, still a cut and a sync.\n"
              "# (b) decides the skip on the device: torch.where(loss > 10, old, new) on the parameters and the\n"
              "#     optimizer state keeps the step a true skip, and nothing is read back: one graph per step,\n"
              "#     cut only where MpDeviceLoader marks the step. (Scaling the update by 0 would not skip an\n"
              "#     Adam step: the moments decay, parameters move by m/sqrt(v), weight decay applies.)\n"
              "# (c) an extra xm.mark_step() before the check makes the cut explicit; it stays every step.\n"
              "answer_3 = 'b'"),
    mistakes=[("a", "`loss.item()` after the optimizer step still reads a value back mid-step: the cut moves, "
                    "it does not go away"),
              ("c", "mark_step() cuts the graph on purpose: you still get two graphs and a host sync per step")],
)

q4 = Exercise(
    "Q4 the first mid-run compile",
    unit="step",
    hint=("The trial run saw steps 0-11. Which new shape or graph does the real run meet "
          "first after that? Steps are numbered from 0; an epoch has ceil(1000 / 64) steps."),
    solution=("steps_per_epoch = math.ceil(1000 / 64)   # 16: fifteen of 64, the last of 40\n"
              "ragged_step = steps_per_epoch - 1         # 15: the last batch, a new shape\n"
              "guard_step = 100 - 1                      # 99: the rank-0 branch, a new graph\n"
              "answer_4 = min(ragged_step, guard_step)   # both are beyond the 12-step trial"),
    mistakes=[(99, "the spike guard at step 99 also compiles, but an earlier step meets a new "
                   "shape first: the short last batch of the first epoch"),
              (16, "steps are numbered from 0: the 16th step of the epoch is step 15"),
              (12, "step 12 is an ordinary full batch: its shape was compiled by the trial run")],
)

q5 = Exercise(
    "Q5 node-hours that pre-compiling saves",
    unit="node-hours",
    rel_tol=0.002,
    hint=("Cold: every node compiles every graph, nodes × graphs × minutes. Pre-compiled: one node runs "
          "neuron_parallel_compile with 8 workers (compilation.parallel_precompile_s), then every node starts warm."),
    solution=("n_nodes, n_graphs, compile_s = 16, 6, 15 * minute   # 15 min per graph: an assumption\n"
              "cold = n_nodes * n_graphs * compile_s                  # node-seconds, every node compiles\n"
              "pre = compilation.parallel_precompile_s(n_graphs, compile_s, n_workers=8)   # one node\n"
              "answer_5 = (cold - pre) / hour                        # node-hours saved"),
    mistakes=[(24.0, "that is the cold start's cost alone; subtract what the one pre-compiling node spends"),
              (1.25, "that is one node's saving; all 16 nodes compile the same six graphs when cold"),
              (22.5, "with 8 workers the six graphs compile side by side: the pre-compiling node spends one "
                     "compile's time, not six")],
)

q6 = Exercise(
    "Q6 buckets for under 10 % padding",
    unit="buckets",
    hint=("Try k = 1, 2, ... with compilation.optimal_buckets on the Wikipedia histogram "
          "(pass counts=...) until compilation.padding_fraction drops below 0.10."),
    solution=("h = compilation.length_histogram('wikipedia-bert-512')\n"
              "for k in range(1, 17):\n"
              "    b = compilation.optimal_buckets(h.n_tokens, k, counts=h.n_sequences)\n"
              "    if compilation.padding_fraction(h.n_tokens, b, counts=h.n_sequences) < 0.10:\n"
              "        break\n"
              "answer_6 = k   # the fewest NEFFs that keep padding under 10 %"),
    mistakes=[(6, "six optimal buckets still pad a little over 10 %; one more is needed"),
              (4, "four powers of two or optimal buckets still pad about 15 %: keep adding one at a time")],
)



def _q7_padding(buckets) -> float:
    from trainium_lab import compilation

    h = compilation.length_histogram("wikipedia-bert-512")
    return compilation.padding_fraction(h.n_tokens, buckets, counts=h.n_sequences)


def _q7_best() -> float:
    from trainium_lab import compilation

    h = compilation.length_histogram("wikipedia-bert-512")
    return _q7_padding(compilation.optimal_buckets(h.n_tokens, 3, counts=h.n_sequences))


def _q7_check(answer, expected):
    """Accept any set of at most three buckets that holds 512 and pads within 10 % of the optimum."""
    if (not isinstance(answer, (tuple, list)) or not answer
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in answer)):
        return False, "expected a tuple of whole, positive bucket lengths"
    if len(set(answer)) > 3:
        return False, f"{len(set(answer))} buckets are {len(set(answer))} NEFFs; the service may keep three"
    if max(answer) < 512:
        return False, f"the longest sequences are 512 tokens: a largest bucket of {max(answer)} cannot hold them"
    pad, best = _q7_padding(sorted(set(answer))), _q7_best()
    if pad > 1.1 * best:
        return False, f"these buckets pad {pad:.1%} of the computed tokens; the best three pad {best:.1%}"
    return True, ""


q7 = Exercise(
    "Q7 three buckets for Wikipedia (open)",
    rel_tol=0.0,
    open_variant=True,
    checker=_q7_check,
    also_accepted=((128, 256, 512), (120, 280, 512)),
    hint=("compilation.optimal_buckets(h.n_tokens, 3, counts=h.n_sequences) gives the best set; any set "
          "that places its boundaries near it pads about as little. The largest must be 512."),
    solution=("h = compilation.length_histogram('wikipedia-bert-512')\n"
              "answer_7 = compilation.optimal_buckets(h.n_tokens, 3, counts=h.n_sequences)   # the best three"),
    mistakes=[((64, 256, 512), "a first bucket of 64 is wasted: few Wikipedia sequences are that short, "
                               "while many pad from just above 64 up to 256"),
              ((256, 512), "two buckets leave the short half padded to 256: use all three NEFFs"),
              ((128, 256, 384), "the longest sequences (512 tokens) fit none of these buckets")],
)

ALL = (q1, q2, q3, q4, q5, q6, q7)
