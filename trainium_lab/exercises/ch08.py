"""Exercises for chapter 08 (inside a NeuronCore). Each reference answer is what its solution
code computes with ``trainium_lab.kernels``; the kernel to complete (Q6) is run in the
emulator and checked for its result and its HBM traffic."""

from __future__ import annotations

import numpy as np

from trainium_lab import kernels, roofline
from trainium_lab.exercises import Exercise
from trainium_lab.units import GiB

__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q8", "ALL"]

q1 = Exercise(
    "Q1 HBM traffic of a tiled matmul",
    unit="× the minimum",
    hint=("A is re-read once per column of output tiles (ceil(n / tile_n) times), B once per row "
          "of output tiles (ceil(m / tile_m) times), C written once; 2 bytes per BF16 element."),
    solution=("m, n, k = 8192, 1024, 4096\n"
              "a_reads = m * k * math.ceil(n / 512)      # A once per column of output tiles\n"
              "b_reads = k * n * math.ceil(m / 128)      # B once per row of output tiles\n"
              "c_writes = m * n\n"
              "tiled = 2 * (a_reads + b_reads + c_writes)              # bytes, BF16: 2 bytes each\n"
              "assert tiled == kernels.matmul_hbm_bytes(m, n, k, 128, 512, 'bfloat16')\n"
              "minimum = roofline.matmul_bytes(m, n, k, 'bf16')           # A, B read once, C written once\n"
              "answer_1 = tiled / minimum                                 # × the roofline's minimum"),
    mistakes=[
        (1.0, "that is the roofline's minimum, A and B read once; a tiled kernel re-reads them"),
        (lambda: 2 * (8192 * 4096 * 64 + 4096 * 1024 * 2 + 8192 * 1024) / roofline.matmul_bytes(8192, 1024, 4096, "bf16"),
         "you swapped the counts: A (m × k) is re-read for every column of tiles, ceil(n / tile_n), "
         "and B for every row of tiles, ceil(m / tile_m)"),
        (lambda: kernels.matmul_hbm_bytes(8192, 1024, 4096, 128, 512, "bfloat16") / GiB,
         "that is the traffic in GiB; the question asks for it as a multiple of the roofline's minimum"),
    ],
)

def _core_ridge() -> float:
    return kernels.core_roofline("trn2", "bfloat16").intensity[1]


def _q2_intensity(tiles) -> float:
    if tiles is None:
        return roofline.arithmetic_intensity(8192, 8192, 8192, "bf16")
    return 2 * 8192**3 / kernels.matmul_hbm_bytes(8192, 8192, 8192, *tiles, "bfloat16")


q2 = Exercise(
    "Q2 intensity of 256 × 1024 tiles against the core's ridge",
    unit="× the ridge",
    hint=("2·m·n·k FLOPs divided by the tiled kernel's HBM bytes (kernels.matmul_hbm_bytes), then divided "
          "by one core's ridge (kernels.core_roofline('trn2', 'bfloat16').intensity[1])."),
    solution=("s = 8192\n"
              "flops = 2 * s**3\n"
              "moved = kernels.matmul_hbm_bytes(s, s, s, 256, 1024, 'bfloat16')   # bytes\n"
              "ridge = kernels.core_roofline('trn2', 'bfloat16').intensity[1]     # one core's ridge\n"
              "answer_2 = flops / moved / ridge                                  # > 1: compute-bound"),
    mistakes=[
        (lambda: _q2_intensity(None) / _core_ridge(),
         "that is the roofline's intensity with A and B read once; the tiled kernel moves more"),
        (lambda: _q2_intensity((512, 512)) / _core_ridge(),
         "that is the square 512 × 512 tile: the same PSUM banks, but 1/256 + 1/1024 is more than "
         "2/512, so 256 × 1024 re-reads more"),
        (lambda: _q2_intensity((256, 1024)) / roofline.ridge_point("trn2", "bf16"),
         "that compares with the chip's ridge; one core has its own share of HBM bandwidth and peak"),
        (lambda: _q2_intensity((256, 1024)),
         "that is the intensity itself; the question asks for it as a multiple of the core's ridge"),
    ],
)

q3 = Exercise(
    "Q3 lanes used by 160 rows",
    hint=("Each tile holds up to 128 rows; an instruction costs the same whatever its number of "
          "rows. Run kernels.rmsnorm on 160 rows and read lane_utilisation."),
    solution=("run = kernels.rmsnorm(np.ones((160, 512)))   # tiles of 128 and 32 rows\n"
              "answer_3 = run.lane_utilisation             # (128 + 32) / (2 × 128)"),
    wrong=160 / 128,
    mistakes=[(1.0, "the second tile has 32 rows but costs as much as a full one"),
              (32 / 128, "that is the second tile alone; the first one is full"),
              (160 / 128, "a fraction of lanes cannot exceed 1: count the lanes both tiles offer")],
    rel_tol=0.001,
)

q4 = Exercise(
    "Q4 the fewest buffers that reach the floor",
    unit="buffers",
    rel_tol=0.0,
    hint=("kernels.pipeline_time_s(8, 3, 2, 1, buffers) for 1, 2, 3, 4 buffers: the pipeline cannot beat "
          "fill + (n − 1) × its longest stage; find the first count that reaches the smallest time."),
    solution=("n, load, compute, store = 8, 3 * us, 2 * us, 1 * us\n"
              "times = {b: kernels.pipeline_time_s(n, load, compute, store, b) for b in (1, 2, 3, 4)}\n"
              "best = min(times.values())                         # L + C + S + (n − 1)·max(L, C, S)\n"
              "answer_4 = min(b for b, t in times.items() if t <= best * (1 + 1e-9))"),
    mistakes=[(3, "three buffers reach the floor, but so do two here: the next load overlaps the previous "
                  "tile's compute and store, which together take no longer than the load"),
              (1, "one buffer makes every tile wait for the previous store: n·(load + compute + store)"),
              (4, "more buffers cost SBUF and cannot beat the floor the longest stage (the load) sets")],
)

q5 = Exercise(
    "Q5 which engine binds the softmax",
    hint=("Run kernels.softmax on a [512, 2048] input and read binding_engine; compare the vector "
          "engine's passes (max, sum, divide) with the scalar engine's single exp."),
    solution=("run = kernels.softmax(np.zeros((512, 2048)), chip='trn2')\n"
              "answer_5 = run.binding_engine"),
    mistakes=[("scalar", "exp is one pass on the scalar engine; the vector engine makes three (max, sum, "
                          "division) plus the copy that rounds the result to BF16"),
              ("tensor", "this softmax has no matmul")],
)


def _loads_y_twice(k, x, y, out):
    """A plausible wrong kernel: right values, but y is loaded twice."""
    rows, d = x.shape
    p = k.core.partitions
    xs = k.pool("sbuf", (p, d), x.dtype, 2, "x")
    ys = k.pool("sbuf", (p, d), y.dtype, 2, "y")
    for i, r0 in enumerate(range(0, rows, p)):
        r = min(p, rows - r0)
        k.load(xs[i][:r], x[r0:r0 + r])
        k.load(ys[i][:r], y[r0:r0 + r])
        k.load(ys[i][:r], y[r0:r0 + r])
        k.tensor_tensor(xs[i][:r], xs[i][:r], ys[i][:r], "add")
        k.store(out[r0:r0 + r], xs[i][:r])


def _skips_last_tile(k, x, y, out):
    """A plausible wrong kernel: only whole tiles of 128 rows, so the last 44 rows stay zero."""
    rows, d = x.shape
    p = k.core.partitions
    xs = k.pool("sbuf", (p, d), x.dtype, 2, "x")
    ys = k.pool("sbuf", (p, d), y.dtype, 2, "y")
    for i, r0 in enumerate(range(0, rows - rows % p, p)):
        k.load(xs[i], x[r0:r0 + p])
        k.load(ys[i], y[r0:r0 + p])
        k.tensor_tensor(xs[i], xs[i], ys[i], "add")
        k.store(out[r0:r0 + p], xs[i])


def _run_residual(fn, x: np.ndarray, y: np.ndarray):
    k = kernels.Kernel("trn2", name="residual add")
    xt, yt = k.hbm(x, "bfloat16", "x"), k.hbm(y, "bfloat16", "y")
    out = k.hbm_zeros(x.shape, "bfloat16", "out")
    fn(k, xt, yt, out)
    return out.data.copy(), k.result()


def _check_kernel(answer, expected) -> tuple[bool, str]:
    """Run the learner's kernel and the reference on a 300 × 200 input (not a multiple of the
    tile) and compare the result and the HBM traffic."""
    if not callable(answer):
        return False, f"expected a kernel function kernel(k, x, y, out), got {type(answer).__name__}"
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((300, 200)), rng.standard_normal((300, 200))
    got, run = _run_residual(answer, x, y)
    want, ref = _run_residual(expected, x, y)
    if not np.array_equal(got, want):
        wrong_rows = int(np.any(got != want, axis=1).sum())
        return False, (f"{wrong_rows} of 300 output rows differ from x + y (did every tile, "
                       "including the last 44 rows, get added and stored?)")
    if run.hbm_read_bytes != ref.hbm_read_bytes:
        return False, (f"the kernel reads {run.hbm_read_bytes:,.0f} bytes from HBM; x and y need only "
                       f"{ref.hbm_read_bytes:,.0f}, each element loaded once")
    if run.hbm_write_bytes != ref.hbm_write_bytes:
        return False, (f"the kernel writes {run.hbm_write_bytes:,.0f} bytes to HBM; the output is "
                       f"{ref.hbm_write_bytes:,.0f}, each element stored once")
    return True, ""


q6 = Exercise(
    "Q6 complete the residual-add kernel",
    hint=("For each tile of up to 128 rows: load the rows of x and of y into SBUF, add them on the "
          "vector engine (k.tensor_tensor with op 'add'), store the sum into out. Slice the last "
          "tile to the rows that are left."),
    solution=("def residual_add(k, x, y, out):\n"
              "    rows, d = x.shape\n"
              "    p = k.core.partitions                       # 128 rows per tile\n"
              "    xs = k.pool('sbuf', (p, d), x.dtype, 2, 'x')  # two buffers per stream\n"
              "    ys = k.pool('sbuf', (p, d), y.dtype, 2, 'y')\n"
              "    for i, r0 in enumerate(range(0, rows, p)):\n"
              "        r = min(p, rows - r0)                   # the last tile may be short\n"
              "        k.load(xs[i][:r], x[r0:r0 + r])\n"
              "        k.load(ys[i][:r], y[r0:r0 + r])\n"
              "        k.tensor_tensor(xs[i][:r], xs[i][:r], ys[i][:r], 'add')\n"
              "        k.store(out[r0:r0 + r], xs[i][:r])\n"
              "answer_6 = residual_add"),
    wrong=lambda: _loads_y_twice,
    mistakes=[(lambda: _loads_y_twice, "each element of y is loaded twice: the HBM traffic is what the "
                                       "checker compares"),
              (lambda: _skips_last_tile, "range(0, rows - rows % p, p) stops before the short last tile: "
                                         "its 44 rows are never added")],
    checker=_check_kernel,
)



def _q8_check(answer, expected):
    """Accept any (tile_m, tile_n, tile_k) the emulator runs on a Trainium3 core within 10 % of its bound."""
    from trainium_lab import kernels

    if (not isinstance(answer, (tuple, list)) or len(answer) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in answer)):
        return False, "expected three whole, positive numbers (tile_m, tile_n, tile_k)"
    tm, tn, tk = answer
    try:
        run = kernels.matmul_cost(8192, 4096, 8192, chip="trn3", tile_m=tm, tile_n=tn, tile_k=tk)
    except ValueError as err:
        return False, f"the emulator refuses it: {err}"
    bound = kernels.core_bound_s(8192, 4096, 8192, "bfloat16", "trn3")
    if run.time_s > 1.1 * bound:
        return False, (f"{tm} × {tn} with k chunks of {tk} takes {run.time_s * 1e3:.2f} ms, "
                       f"{run.time_s / bound - 1:.0%} above the bound of {bound * 1e3:.2f} ms; "
                       f"{run.binding_engine} binds")
    return True, ""


q8 = Exercise(
    "Q8 tiles at the roofline on Trainium3 (open)",
    rel_tol=0.0,
    open_variant=True,
    checker=_q8_check,
    also_accepted=((512, 512, 2048), (256, 1024, 2048)),
    hint=("Trainium3's core has more HBM bandwidth per FLOP: compare tile intensities with its ridge "
          "(kernels.core_roofline('trn3', ...)); then mind the contraction chunk as in chained problem 1."),
    solution=("bound = kernels.core_bound_s(8192, 4096, 8192, 'bfloat16', 'trn3')      # s\n"
              "for tm, tn in ((128, 512), (256, 512), (512, 512)):                    # smallest first\n"
              "    run = kernels.matmul_cost(8192, 4096, 8192, chip='trn3', tile_m=tm, tile_n=tn, tile_k=2048)\n"
              "    if run.time_s <= 1.1 * bound:\n"
              "        break\n"
              "answer_8 = (tm, tn, 2048)      # the smallest tile (least SBUF) that reaches the bound"),
    mistakes=[((128, 512, 2048), "128 × 512 tiles stay below even Trainium3's lower ridge: HBM binds"),
              ((512, 512, 7936), "the largest chunk that fits SBUF: the run takes about as long as its "
                                 "loads and matmuls added together, so they no longer overlap"),
              ((512, 1024, 2048), "512 × 1024 with two buffers needs 16 PSUM banks; a core has 8")],
)

ALL = (q1, q2, q3, q4, q5, q6, q8)
