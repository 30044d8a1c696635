"""Chapter 08's NKI kernels: what the emulator's kernels look like in real NKI.

Written by the course against the current NKI API reference and tutorials (NKI 0.3 and later:
``nki.jit``, ``nl.ndarray(..., buffer=...)``, ``nisa.dma_copy``, ``nisa.nc_matmul``,
``nisa.activation``, ``nisa.tensor_scalar``, ``nisa.tensor_tensor``, ``nisa.tensor_reduce``,
``nisa.tensor_copy``, ``nisa.memset``, ``nl.program_id``), and **not executed here**: running
them needs NKI, which is installed with the Neuron compiler from AWS's own package repository,
and its CPU simulator (``nki.simulate``) comes with it; the course installs only from PyPI.
They are kept as text so a test can check them against ``data/nki_api.csv`` and against the
emulator kernels they stand beside (``tests/test_kernels.py``). For readability they assume
whole tiles (rows a multiple of 128, ``d`` a multiple of 512); the emulator kernels also
handle the ragged last tile.

References
----------
AWS NKI docs: "Matrix multiplication" tutorial and its kernels, "Using Logical Neuron Cores
(LNC)", the ``nki.isa`` and ``nki.language.tile_size`` API pages (``data/sources.csv``:
``aws-nki-matmul-tutorial``, ``aws-nki-lnc``, ``aws-nki-isa-api``, ``aws-nki-tile-size``).
"""

from __future__ import annotations

__all__ = ["KERNELS", "EMULATOR_KERNEL"]

_HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n"

KERNELS: dict[str, str] = {
    "add": _HEADER + '''@nki.jit
def add_kernel(x, y):
    """out = x + y, 128 rows per tile."""
    rows, d = x.shape
    P = nl.tile_size.pmax                                  # 128 partitions
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(rows // P):
        xt = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        yt = nl.ndarray((P, d), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * P:(i + 1) * P, 0:d])
        nisa.dma_copy(dst=yt, src=y[i * P:(i + 1) * P, 0:d])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=yt, op=nl.add)   # vector engine
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, 0:d], src=xt)
    return out
''',
    "add_lnc2": _HEADER + '''@nki.jit
def add_kernel_lnc(x, y):
    """out = x + y with the tiles split between the two cores of an LNC = 2 launch:
    add_kernel_lnc[2](x, y). Launched without [2], one core does every tile."""
    rows, d = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)   # both cores see it
    n_cores = nl.num_programs()                            # 2 under kernel[2](...), else 1
    core = nl.program_id(0)                                # 0 or 1
    per_core = rows // P // n_cores
    for t in range(per_core):
        i = core * per_core + t                            # this core's half of the tiles
        xt = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        yt = nl.ndarray((P, d), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * P:(i + 1) * P, 0:d])
        nisa.dma_copy(dst=yt, src=y[i * P:(i + 1) * P, 0:d])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=yt, op=nl.add)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, 0:d], src=xt)
    return out
''',
    "tiled_matmul": _HEADER + '''@nki.jit
def tiled_matmul_kernel(a_t, b):
    """c = a_t.T @ b, one 128 x 512 output tile at a time, accumulated in one PSUM bank."""
    K, M = a_t.shape                                       # A arrives transposed: [K, M]
    _, N = b.shape
    TK = nl.tile_size.pmax                                 # contraction on the partitions
    TM = nl.tile_size.gemm_stationary_fmax                 # 128 stationary columns
    TN = nl.tile_size.gemm_moving_fmax                     # 512 moving columns = one PSUM bank
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m in range(M // TM):
        for n in range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TK):
                a_tile = nl.ndarray((TK, TM), dtype=a_t.dtype, buffer=nl.sbuf)
                b_tile = nl.ndarray((TK, TN), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_tile, src=a_t[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.dma_copy(dst=b_tile, src=b[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a_tile, moving=b_tile)   # adds into acc
            c_tile = nl.ndarray((TM, TN), dtype=c.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=c_tile, src=acc)          # evacuate PSUM, cast to c's dtype
            nisa.dma_copy(dst=c[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=c_tile)
    return c
''',
    "softmax": _HEADER + '''@nki.jit
def softmax_kernel(x):
    """Row-wise softmax, 128 rows per tile, FP32 intermediates."""
    rows, d = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(rows // P):
        xt = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        e = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * P:(i + 1) * P, 0:d])
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=xt, axis=(1,))   # row max
        nisa.tensor_scalar(dst=neg_max, data=neg_max, op0=nl.multiply, operand0=-1.0)
        nisa.activation(dst=e, op=nl.exp, data=xt, bias=neg_max,             # exp(x - max)
                        reduce_op=nl.add, reduce_res=total,                  # and its row sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)             # in one pass
        nisa.tensor_scalar(dst=e, data=e, op0=nl.divide, operand0=total)
        nisa.tensor_copy(dst=xt, src=e)                    # round to the output dtype
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, 0:d], src=xt)
    return out
''',
    "rmsnorm": _HEADER + '''@nki.jit
def rmsnorm_kernel(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight, rows on the partitions; weight is [1, d]."""
    rows, d = x.shape
    P, F = nl.tile_size.pmax, nl.tile_size.psum_bank_fmax
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    # the weight on every partition: ones[1, P].T @ weight[1, d], one PSUM bank at a time
    w_row = nl.ndarray((1, d), dtype=weight.dtype, buffer=nl.sbuf)
    ones = nl.ndarray((1, P), dtype=weight.dtype, buffer=nl.sbuf)
    w_all = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=weight)
    nisa.memset(dst=ones, value=1.0)
    for j in range(d // F):
        bank = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=bank, stationary=ones, moving=w_row[0:1, j * F:(j + 1) * F])
        nisa.tensor_copy(dst=w_all[0:P, j * F:(j + 1) * F], src=bank)
    for i in range(rows // P):
        xt = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        y = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[i * P:(i + 1) * P, 0:d])
        nisa.activation(dst=y, op=nl.square, data=xt,                 # x^2, and its row sum
                        reduce_op=nl.add, reduce_res=s, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.tensor_scalar(dst=s, data=s, op0=nl.multiply, operand0=1.0 / d,
                           op1=nl.add, operand1=eps)              # mean + eps
        nisa.activation(dst=s, op=nl.rsqrt, data=s)               # 1 / rms
        nisa.tensor_scalar(dst=y, data=xt, op0=nl.multiply, operand0=s)   # x / rms, vector engine
        nisa.tensor_tensor(dst=xt, data1=y, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, 0:d], src=xt)
    return out
''',
}

#: the emulator kernel each NKI kernel stands beside
EMULATOR_KERNEL: dict[str, str] = {
    "add": "exercises.ch08.q6 (the residual add)", "add_lnc2": "exercises.ch08.q6, split over two cores",
    "tiled_matmul": "kernels.tiled_matmul", "softmax": "kernels.softmax (fused_sum=True)",
    "rmsnorm": "kernels.rmsnorm (scale_engine='vector')",
}
