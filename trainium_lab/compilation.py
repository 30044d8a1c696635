"""Static shapes, bucketing and the compile cache: what recompiles cost at Trainium scale.

The Neuron compiler (``neuronx-cc``) turns one XLA graph with fixed shapes into one
NEFF ahead of time. Every distinct shape (and every distinct graph) is another
compile and, once loaded, another NEFF in device memory. This module is the
arithmetic of that: pure functions in base units (tokens, s, bytes), no JAX.

Bucketing
    :func:`pick_bucket`, :func:`padded_tokens`, :func:`padding_fraction`,
    :func:`optimal_buckets` (exact dynamic programming over the sorted distinct
    lengths), :func:`optimal_buckets_by_count`, :func:`power_of_two_buckets`,
    :func:`bucket_set_cost` and :func:`bucket_tradeoff` (padding compute against
    compile time and loaded-NEFF memory), :func:`synthetic_lengths` and
    :func:`length_histogram` (a published sequence-length histogram).
The compile cache
    :class:`GraphSpec` (what a graph's shape signature holds), :class:`CompileEnv`
    (compiler version, flags, LNC), :func:`graph_hash`, :func:`flags_hash`,
    :func:`cache_key` and :func:`cache_key_changes`, modelled on the Neuron
    Persistent Cache: "the cache uses hash of the Neuron compiler flags and XLA
    graph as the key. If the Neuron compiler version or XLA graph changes, you will
    see recompilation" [1]_.
A training run
    :func:`step_stream` (the shape of every step: variable lengths, a ragged last
    batch, a branch on some ranks), :func:`run_compiles` (compiles, stalls and
    node-seconds with per-node or shared caches), :func:`trial_run_keys` and
    :func:`parallel_precompile_s` (``neuron_parallel_compile`` [2]_).
Padding against compile time
    ``bucket_tradeoff(..., tokens_per_s=..., n_epochs=..., n_cold_starts=...)`` adds the
    padding time and the compiles per cold start (``total_s``): the bucket count that
    minimises it depends on throughput, epochs and whether the cache survives restarts.

Numbers that no public source gives (compile time per NEFF, memory per loaded NEFF)
are inputs, labelled assumptions wherever they are used. Sourced statements about
the compiler and the cache are in ``data/compiler_facts.csv`` (:func:`compiler_facts`).

References
----------
.. [1] AWS Neuron documentation, "Neuron Persistent Cache",
   https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-features/neuron-caching.html
.. [2] AWS Neuron documentation, "PyTorch NeuronX neuron_parallel_compile CLI" (a torch-neuronx
   tool: legacy, as PyTorch/XLA training is unsupported from Neuron 2.30 and torch-neuronx is not
   shipped from 2.32; the cache page [1] describes the same path),
   https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/training/pytorch-neuron-parallel-compile.html
.. [3] AWS Neuron documentation, "Neuron Device Memory" (per-NEFF memory, shared scratchpad),
   https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/explore/device-memory.html
.. [4] M. M. Krell, M. Kosec, S. P. Perez, A. Fitzgibbon, "Efficient Sequence Packing
   without Cross-contamination", arXiv:2107.02027, 2021 (the Wikipedia and SQuAD
   length histograms, published in graphcore/tutorials ``blogs_code/packedBERT/histograms.py``).
.. [5] Z. Galil, K. Park, "Dynamic programming with convexity, concavity and sparsity",
   Theoretical Computer Science 92(1), 1992 (the quadrangle inequality and monotone
   optimal split points used by :func:`optimal_buckets`).

Examples
--------
>>> padding_fraction(range(1, 129), [128])  # uniform lengths 1..128, one bucket
0.49609375
>>> optimal_buckets([5, 5, 9, 30, 31, 32], 2)
(9, 32)
"""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import choice, finite_number, in_range, integer, positive
from trainium_lab.units import MiB, minute

__all__ = [
    "MAX_TOKENS", "MAX_BUCKETS",
    "pick_bucket", "padded_tokens", "padding_fraction", "optimal_buckets",
    "optimal_buckets_by_count", "power_of_two_buckets", "BucketSetCost", "bucket_set_cost",
    "bucket_tradeoff", "synthetic_lengths", "length_histogram", "length_shares", "length_summary", "HISTOGRAMS",
    "GraphSpec", "CompileEnv", "graph_hash", "flags_hash", "cache_key", "cache_key_changes",
    "step_stream", "RunCompiles", "run_compiles", "trial_run_keys", "parallel_precompile_s",
    "compiler_facts",
]

#: longest sequence (tokens) the functions accept; keeps every sum exact in int64
MAX_TOKENS = 2**31 - 1
#: most samples (or histogram total) accepted
MAX_SAMPLES = 10**8
#: most buckets a set may have
MAX_BUCKETS = 4096
#: the published histograms in ``data/length_histograms.csv`` (name -> longest length)
HISTOGRAMS = ("wikipedia-bert-512", "squad-1.1-384")


# ------------------------------------------------------------------ validation

def _int_array(name: str, values, *, minimum: int, maximum: int, max_size: int) -> np.ndarray:
    """A 1-D int64 array of integers in [minimum, maximum]; ValueError otherwise."""
    if isinstance(values, (str, bytes, bool, dict)) or values is None:
        raise ValueError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    if isinstance(values, (range, np.ndarray)):
        raw = values
    else:
        try:
            raw = list(values)
        except TypeError:
            raise ValueError(f"{name} must be a sequence of integers, got "
                             f"{type(values).__name__}") from None
        if any(isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)) for v in raw):
            raise ValueError(f"{name} must hold only integers (no text, None or booleans)")
    try:
        arr = np.asarray(raw)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{name} must be a flat sequence of integers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of integers, got shape {arr.shape}")
    if arr.size > max_size:
        raise ValueError(f"{name} may hold at most {max_size:,} values, got {arr.size:,}")
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
            raise ValueError(f"{name} must hold whole numbers (no NaN, infinity or fractions)")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < minimum or hi > maximum:
        raise ValueError(f"{name} must be integers in [{minimum}, {maximum:,}], got values from "
                         f"{lo:g} to {hi:g}")
    return arr.astype(np.int64, copy=False)


def _histogram(lengths, counts=None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct lengths and how many samples have each (both int64)."""
    arr = _int_array("lengths", lengths, minimum=1, maximum=MAX_TOKENS, max_size=MAX_SAMPLES)
    if counts is None:
        top = int(arr.max())
        if top <= max(4 * arr.size, 1 << 16):
            hist = np.bincount(arr, minlength=top + 1)
            values = np.flatnonzero(hist)
            return values.astype(np.int64), hist[values].astype(np.int64)
        values, cnt = np.unique(arr, return_counts=True)
        return values.astype(np.int64), cnt.astype(np.int64)
    cnt = _int_array("counts", counts, minimum=0, maximum=MAX_SAMPLES, max_size=MAX_SAMPLES)
    if cnt.size != arr.size:
        raise ValueError(f"counts must have one entry per length: {cnt.size} counts for "
                         f"{arr.size} lengths")
    total = int(cnt.sum())
    if total < 1 or total > MAX_SAMPLES:
        raise ValueError(f"counts must add up to between 1 and {MAX_SAMPLES:,}, got {total:,}")
    order = np.argsort(arr, kind="stable")
    arr, cnt = arr[order], cnt[order]
    values, start = np.unique(arr, return_index=True)
    summed = np.add.reduceat(cnt, start)
    keep = summed > 0
    return values[keep], summed[keep]


def _buckets(buckets) -> np.ndarray:
    arr = _int_array("buckets", buckets, minimum=1, maximum=MAX_TOKENS, max_size=MAX_BUCKETS)
    return np.unique(arr)


# -------------------------------------------------------------------- bucketing

def pick_bucket(n_tokens: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``n_tokens``: the shape the input is padded to.

    Parameters
    ----------
    n_tokens : int
        Length of the input in tokens (>= 1).
    buckets : sequence of int
        The compiled lengths (each >= 1, any order).

    Returns
    -------
    int
        The smallest bucket >= ``n_tokens``.

    Raises
    ------
    ValueError
        If ``n_tokens`` is longer than every bucket (no compiled graph fits it).

    References
    ----------
    Bucketing as the Neuron inference libraries use it: one compiled graph per
    bucket, inputs padded to the smallest bucket that fits (NxD Inference
    "bucketing" feature guide, AWS Neuron documentation).

    Examples
    --------
    >>> pick_bucket(300, [128, 256, 512, 1024])
    512
    >>> pick_bucket(128, [512, 128])
    128
    """
    n_tokens = integer("n_tokens", n_tokens, minimum=1, maximum=MAX_TOKENS)
    b = _buckets(buckets)
    i = int(np.searchsorted(b, n_tokens, side="left"))
    if i == b.size:
        raise ValueError(f"n_tokens={n_tokens} is longer than the largest bucket ({int(b[-1])}): "
                         "no compiled graph fits it; add a bucket >= n_tokens or truncate")
    return int(b[i])


def _assign(values: np.ndarray, b: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(b, values, side="left")
    if idx.size and idx[-1] == b.size:
        raise ValueError(f"lengths up to {int(values[-1])} tokens do not fit the largest bucket "
                         f"({int(b[-1])}): every length needs a bucket >= it")
    return b[idx]


def padded_tokens(lengths, buckets, counts=None) -> int:
    """Tokens computed when every sequence is padded to its bucket (real + padding).

    Parameters
    ----------
    lengths : sequence of int
        Sequence lengths in tokens (each >= 1), or the distinct lengths of a
        histogram when ``counts`` is given.
    buckets : sequence of int
        Bucket lengths; the largest must hold the longest sequence.
    counts : sequence of int, optional
        Number of sequences of each length (a histogram).

    Returns
    -------
    int
        Sum over sequences of their bucket's length.

    Examples
    --------
    >>> padded_tokens([3, 5, 9], [4, 8, 16])
    28
    """
    values, cnt = _histogram(lengths, counts)
    return int((_assign(values, _buckets(buckets)) * cnt).sum())


def padding_fraction(lengths, buckets, counts=None) -> float:
    """Padding tokens ÷ all computed tokens when each sequence is padded to its bucket.

    ``(Σ bucket(L) − Σ L) / Σ bucket(L)``: the share of the compute spent on padding
    (for work proportional to tokens; attention's quadratic term is not modelled).

    Parameters
    ----------
    lengths, buckets, counts
        As in :func:`padded_tokens`.

    Returns
    -------
    float
        In [0, 1).

    References
    ----------
    The same quantity is the "padding" of [4]_; its inverse 1 / (1 − padding) is
    that paper's "theoretical speed-up limit" of packing.

    Examples
    --------
    Uniform lengths 1..128: one bucket pads 8,128 of 16,384 tokens; {64, 128}
    pads 4,032 of 12,288:

    >>> round(padding_fraction(range(1, 129), [128]), 4), round(padding_fraction(range(1, 129), [64, 128]), 4)
    (0.4961, 0.3281)
    """
    values, cnt = _histogram(lengths, counts)
    padded = int((_assign(values, _buckets(buckets)) * cnt).sum())
    real = int((values * cnt).sum())
    return (padded - real) / padded


def _dp_layers(values: np.ndarray, cnt: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact DP: ``cost[t-1]`` = fewest padded tokens with ``t`` buckets, and split parents.

    ``f_t(j) = min_{i<j} f_{t-1}(i) + v_j · (C_j − C_i)`` over the ``m`` sorted
    distinct lengths ``v`` with prefix counts ``C``. The cost
    ``w(i, j) = v_j (C_j − C_i)`` satisfies the quadrangle inequality
    (``w(a,c) + w(b,d) − w(a,d) − w(b,c) = (v_c − v_d)(C_b − C_a) <= 0``), so the
    leftmost optimal split point is monotone in ``j`` [5]_ and each layer is
    solved by divide and conquer, one recursion level at a time, vectorised.
    """
    m = values.size
    prefix = np.concatenate(([0], np.cumsum(cnt))).astype(np.int64)
    v_end = np.concatenate(([0], values)).astype(np.int64)  # v_end[j]: bucket closing prefix j
    big = np.iinfo(np.int64).max // 4
    k = min(k, m)
    parents = np.zeros((k, m + 1), dtype=np.int64)
    costs = np.full(k, big, dtype=np.int64)
    f = np.full(m + 1, big, dtype=np.int64)
    f[1:] = v_end[1:] * prefix[1:]
    f[0] = big
    costs[0] = f[m]
    for t in range(2, k + 1):
        new = np.full(m + 1, big, dtype=np.int64)
        par = np.zeros(m + 1, dtype=np.int64)
        # segments of j to solve, with the range their optimal i lies in
        jlo = np.array([t], dtype=np.int64)
        jhi = np.array([m], dtype=np.int64)
        olo = np.array([t - 1], dtype=np.int64)
        ohi = np.array([m - 1], dtype=np.int64)
        while jlo.size:
            mid = (jlo + jhi) // 2
            lens = np.minimum(mid - 1, ohi) - olo + 1
            starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
            ramp = np.arange(int(starts[-1] + lens[-1]))
            cand = ramp + np.repeat(olo - starts, lens)
            vals = f[cand] - np.repeat(v_end[mid], lens) * prefix[cand]
            mins = np.minimum.reduceat(vals, starts)
            # leftmost position of each segment's minimum
            first = np.minimum.reduceat(np.where(vals == np.repeat(mins, lens), ramp, ramp.size),
                                        starts)
            best = cand[first]
            new[mid] = mins + v_end[mid] * prefix[mid]
            par[mid] = best
            left = jlo <= mid - 1
            right = mid + 1 <= jhi
            jlo, jhi, olo, ohi = (np.concatenate((jlo[left], mid[right] + 1)),
                                  np.concatenate((mid[left] - 1, jhi[right])),
                                  np.concatenate((olo[left], best[right])),
                                  np.concatenate((best[left], ohi[right])))
        f = new
        parents[t - 1] = par
        costs[t - 1] = f[m]
    return costs, parents


def _backtrack(values: np.ndarray, parents: np.ndarray, t: int) -> tuple[int, ...]:
    j = values.size
    out = []
    while t >= 1 and j > 0:
        out.append(int(values[j - 1]))
        j = int(parents[t - 1][j]) if t > 1 else 0
        t -= 1
    return tuple(sorted(out))


def optimal_buckets(lengths, n_buckets: int, counts=None) -> tuple[int, ...]:
    """The set of at most ``n_buckets`` bucket lengths with the fewest padded tokens.

    The longest length is always a bucket (it must fit). Any optimal set can be
    taken from the data's own distinct lengths (a bucket between two lengths can
    be lowered to the longer of them at no loss), so an exact dynamic programme
    over the sorted distinct lengths finds it; see :func:`_dp_layers`. Runs in
    O(k · m log m) for ``m`` distinct lengths, vectorised with NumPy: a million
    token lengths (at most a few thousand distinct values) and 8 buckets take well
    under a second; a million *distinct* lengths take seconds.

    Parameters
    ----------
    lengths : sequence of int
        Sequence lengths (>= 1), or a histogram's distinct lengths with ``counts``.
    n_buckets : int
        Most buckets allowed (1 to 4096).
    counts : sequence of int, optional
        Number of sequences of each length.

    Returns
    -------
    tuple of int
        Bucket lengths, ascending; fewer than ``n_buckets`` only when that many
        already give zero padding (or fewer buckets tie).

    References
    ----------
    [5]_ for the divide-and-conquer speed-up of the DP.

    Examples
    --------
    >>> optimal_buckets(range(1, 129), 2)
    (64, 128)
    >>> optimal_buckets([7, 7, 7], 4)
    (7,)
    """
    n_buckets = integer("n_buckets", n_buckets, minimum=1, maximum=MAX_BUCKETS)
    values, cnt = _histogram(lengths, counts)
    costs, parents = _dp_layers(values, cnt, n_buckets)
    t = int(np.flatnonzero(costs == costs.min())[0]) + 1
    return _backtrack(values, parents, t)


def optimal_buckets_by_count(lengths, max_buckets: int, counts=None) -> list[tuple[int, ...]]:
    """The optimal set for every bucket count 1..``max_buckets`` from one DP run.

    Returns
    -------
    list of tuple of int
        Entry ``k − 1`` is ``optimal_buckets(lengths, k)``.

    Examples
    --------
    >>> optimal_buckets_by_count(range(1, 129), 3)
    [(128,), (64, 128), (42, 85, 128)]
    """
    max_buckets = integer("max_buckets", max_buckets, minimum=1, maximum=MAX_BUCKETS)
    values, cnt = _histogram(lengths, counts)
    costs, parents = _dp_layers(values, cnt, max_buckets)
    out = []
    for k in range(1, max_buckets + 1):
        sub = costs[:min(k, costs.size)]
        t = int(np.flatnonzero(sub == sub.min())[0]) + 1
        out.append(_backtrack(values, parents, t))
    return out


def power_of_two_buckets(max_tokens: int, n_buckets: int) -> tuple[int, ...]:
    """The common habit: the ``n_buckets`` largest powers of two.

    The top bucket is the smallest power of two >= ``max_tokens``; the others halve
    down from it (never below 1). NxD Inference's automatic bucketing uses the same
    habit with a floor: every power of two from 128 to the maximum length (source id
    ``aws-nxdi-features`` in ``data/sources.csv``); here the count is chosen instead.

    Examples
    --------
    >>> power_of_two_buckets(2000, 4)
    (256, 512, 1024, 2048)
    >>> power_of_two_buckets(3, 5)
    (1, 2, 4)
    """
    max_tokens = integer("max_tokens", max_tokens, minimum=1, maximum=MAX_TOKENS)
    n_buckets = integer("n_buckets", n_buckets, minimum=1, maximum=MAX_BUCKETS)
    top = 1 << (max_tokens - 1).bit_length()
    out = []
    b = top
    while b >= 1 and len(out) < n_buckets:
        out.append(b)
        b //= 2
    return tuple(sorted(out))


@dataclass(frozen=True)
class BucketSetCost:
    """What a bucket set costs: padding compute, compiles and loaded-NEFF memory.

    All fields in base units. ``compile_s`` and the memory fields rest on the
    per-NEFF inputs given to :func:`bucket_set_cost`, which are assumptions unless
    you measured them.
    """

    buckets: tuple[int, ...]
    real_tokens: int
    padded_tokens: int
    padding_fraction: float
    n_neffs: int
    compile_s: float
    neff_bytes: float
    shared_scratchpad_bytes: float
    padding_s: float | None

    @property
    def loaded_bytes(self) -> float:
        """Device memory of the loaded NEFFs: per-NEFF parts plus one shared scratchpad."""
        return self.n_neffs * self.neff_bytes + self.shared_scratchpad_bytes

    @property
    def total_s(self) -> float | None:
        """Seconds spent on padding compute plus compiling (``None`` without a throughput)."""
        return None if self.padding_s is None else self.padding_s + self.compile_s

    def _repr_markdown_(self) -> str:
        pad = "" if self.padding_s is None else f", padding compute **{self.padding_s / minute:,.1f} min**"
        return (f"Buckets {list(self.buckets)}: padding **{self.padding_fraction:.1%}** of computed "
                f"tokens{pad}; **{self.n_neffs}** NEFFs to compile (**{self.compile_s / minute:,.0f} min**) "
                f"and keep loaded (**{self.loaded_bytes / MiB:,.0f} MiB**) — per-NEFF inputs are assumptions.")


def bucket_set_cost(lengths, buckets, *, compile_s_per_neff: float, neff_bytes: float,
                    scratchpad_bytes_per_token: float = 0.0, tokens_per_s: float | None = None,
                    n_epochs: float = 1.0, counts=None) -> BucketSetCost:
    """Padding compute, compile time and loaded-NEFF memory of one bucket set.

    Each bucket is one NEFF: compiled once (``compile_s_per_neff``) and kept loaded
    (``neff_bytes`` each: code, constants, DMA rings, private scratchpad). The
    Neuron runtime shares one scratchpad among all NEFFs on a core, sized by the
    largest [3]_, modelled here as the longest bucket × ``scratchpad_bytes_per_token``.
    Padding compute is padding tokens × epochs ÷ ``tokens_per_s`` (work per token
    taken as constant).

    Parameters
    ----------
    lengths, buckets, counts
        As in :func:`padded_tokens`.
    compile_s_per_neff : float
        Seconds to compile one bucket's graph (>= 0). An assumption unless measured:
        no public source gives one for a given model.
    neff_bytes : float
        Device memory each loaded NEFF keeps, in bytes (>= 0). An assumption.
    scratchpad_bytes_per_token : float
        Shared scratchpad per token of the longest bucket (>= 0); an assumption.
    tokens_per_s : float, optional
        Training throughput in tokens/s (> 0), to turn padding into seconds.
    n_epochs : float
        Passes over ``lengths`` (> 0).

    Returns
    -------
    BucketSetCost

    Examples
    --------
    >>> c = bucket_set_cost(range(1, 129), [64, 128], compile_s_per_neff=600, neff_bytes=2**20)
    >>> c.n_neffs, c.compile_s, round(c.padding_fraction, 4), c.loaded_bytes
    (2, 1200.0, 0.3281, 2097152.0)
    """
    compile_s_per_neff = positive("compile_s_per_neff", compile_s_per_neff, allow_zero=True)
    neff_bytes = positive("neff_bytes", neff_bytes, allow_zero=True)
    scratchpad_bytes_per_token = positive("scratchpad_bytes_per_token",
                                          scratchpad_bytes_per_token, allow_zero=True)
    n_epochs = positive("n_epochs", n_epochs)
    if tokens_per_s is not None:
        tokens_per_s = positive("tokens_per_s", tokens_per_s)
    for name, value in (("compile_s_per_neff", compile_s_per_neff), ("neff_bytes", neff_bytes),
                        ("scratchpad_bytes_per_token", scratchpad_bytes_per_token),
                        ("n_epochs", n_epochs)):
        if value > 1e18:
            raise ValueError(f"{name} must be at most 1e18, got {value:g}")
    values, cnt = _histogram(lengths, counts)
    b = _buckets(buckets)
    padded = int((_assign(values, b) * cnt).sum())
    real = int((values * cnt).sum())
    pad_s = None if tokens_per_s is None else (padded - real) * n_epochs / tokens_per_s
    return BucketSetCost(tuple(int(x) for x in b), real, padded, (padded - real) / padded,
                         int(b.size), b.size * compile_s_per_neff, neff_bytes,
                         float(b[-1]) * scratchpad_bytes_per_token, pad_s)


def bucket_tradeoff(lengths, max_buckets: int, *, compile_s_per_neff: float, neff_bytes: float,
                    tokens_per_s: float | None = None, n_epochs: float = 1.0,
                    scratchpad_bytes_per_token: float = 0.0, counts=None,
                    n_cold_starts: float = 1.0) -> pd.DataFrame:
    """Optimal and power-of-two bucket sets for 1..``max_buckets`` buckets, costed.

    Padding against compile time: ``padding_s`` is the time spent computing padding
    tokens over ``n_epochs`` at ``tokens_per_s``; every bucket is a NEFF compiled once
    per cold start, and ``n_cold_starts`` says how many times the run meets an empty
    cache (1 with a shared cache that outlives restarts; one more for each restart onto
    nodes whose local caches are empty). ``total_s = padding_s + n_cold_starts ×
    compile_s`` is the time the two cost together, and the best bucket count minimises it.

    Returns
    -------
    pandas.DataFrame
        One row per (``strategy``, ``n_buckets``): ``strategy`` ("optimal" or
        "powers of two"), ``n_buckets`` (requested), ``buckets`` (text), ``n_neffs``,
        ``padding_fraction``, ``compile_s`` (one cold start), ``loaded_bytes``,
        ``padding_s`` and ``total_s`` (NaN without ``tokens_per_s``).

    Examples
    --------
    >>> df = bucket_tradeoff(range(1, 129), 3, compile_s_per_neff=60, neff_bytes=0)
    >>> df[df.strategy == "optimal"].padding_fraction.round(3).tolist()
    [0.496, 0.328, 0.244]
    >>> df[df.strategy == "powers of two"].buckets.tolist()
    ['128', '64, 128', '32, 64, 128']
    """
    max_buckets = integer("max_buckets", max_buckets, minimum=1, maximum=MAX_BUCKETS)
    n_cold_starts = in_range("n_cold_starts", n_cold_starts, 0, 1e6)
    values, cnt = _histogram(lengths, counts)
    top = int(values[-1])
    sets = {"optimal": optimal_buckets_by_count(values, max_buckets, cnt),
            "powers of two": [power_of_two_buckets(top, k) for k in range(1, max_buckets + 1)]}
    rows = []
    for strategy, by_k in sets.items():
        for k, b in enumerate(by_k, start=1):
            c = bucket_set_cost(values, b, counts=cnt, compile_s_per_neff=compile_s_per_neff,
                                neff_bytes=neff_bytes, tokens_per_s=tokens_per_s, n_epochs=n_epochs,
                                scratchpad_bytes_per_token=scratchpad_bytes_per_token)
            rows.append({"strategy": strategy, "n_buckets": k,
                         "buckets": ", ".join(str(x) for x in c.buckets), "n_neffs": c.n_neffs,
                         "padding_fraction": c.padding_fraction, "compile_s": c.compile_s,
                         "loaded_bytes": c.loaded_bytes,
                         "padding_s": np.nan if c.padding_s is None else c.padding_s,
                         "total_s": (np.nan if c.padding_s is None
                                     else c.padding_s + n_cold_starts * c.compile_s)})
    return pd.DataFrame(rows)


def synthetic_lengths(n_samples: int, *, median_tokens: float = 400.0, sigma: float = 0.8,
                      max_tokens: int = 2048, seed: int = 0) -> np.ndarray:
    """A seeded synthetic length distribution: log-normal, rounded up, truncated.

    Document lengths are commonly right-skewed; a log-normal with the given median
    and shape ``sigma`` (of the underlying normal) stands in for a real corpus.
    Lengths above ``max_tokens`` are truncated to it (as a tokenizer's
    ``max_length`` would), which puts a spike at the top.

    Parameters
    ----------
    n_samples : int
        Number of lengths (1 to 1e8).
    median_tokens : float
        Median of the log-normal (>= 1).
    sigma : float
        Shape (0 < sigma <= 5).
    max_tokens : int
        Truncation length (>= 1).
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    numpy.ndarray
        int64 lengths in [1, max_tokens].

    Examples
    --------
    >>> x = synthetic_lengths(1000, seed=1)
    >>> bool(x.min() >= 1), bool(x.max() <= 2048), x.size
    (True, True, 1000)
    """
    n_samples = integer("n_samples", n_samples, minimum=1, maximum=MAX_SAMPLES)
    median_tokens = finite_number("median_tokens", median_tokens)
    if not 1 <= median_tokens <= MAX_TOKENS:
        raise ValueError(f"median_tokens must be in [1, {MAX_TOKENS:,}], got {median_tokens:g}")
    sigma = finite_number("sigma", sigma)
    if not 0 < sigma <= 5:
        raise ValueError(f"sigma must be in (0, 5], got {sigma:g}")
    max_tokens = integer("max_tokens", max_tokens, minimum=1, maximum=MAX_TOKENS)
    seed = integer("seed", seed, minimum=0, maximum=2**63 - 1)
    rng = np.random.default_rng(seed)
    raw = rng.lognormal(math.log(median_tokens), sigma, size=n_samples)
    return np.clip(np.ceil(raw), 1, max_tokens).astype(np.int64)


def length_shares(lengths, counts=None, n_bins: int = 128) -> pd.DataFrame:
    """Share of sequences in each of at most ``n_bins`` equal-width length bins, for a chart.

    Bins span 1..longest length; a bin holds lengths ``bin_start .. bin_end``
    (inclusive). With fewer distinct lengths than bins, each bin is one token wide.

    Returns
    -------
    pandas.DataFrame
        ``bin_start``, ``bin_end`` (tokens) and ``share`` (fraction of all sequences).

    Examples
    --------
    >>> length_shares([1, 2, 2, 4], n_bins=2)[["bin_start", "bin_end"]].values.tolist()
    [[1, 2], [3, 4]]
    >>> length_shares([1, 2, 2, 4], n_bins=2).share.tolist()
    [0.75, 0.25]
    """
    n_bins = integer("n_bins", n_bins, minimum=1, maximum=100_000)
    values, cnt = _histogram(lengths, counts)
    top = int(values[-1])
    width = max(1, -(-top // n_bins))
    idx = (values - 1) // width
    n = int(idx[-1]) + 1
    per_bin = np.bincount(idx, weights=cnt, minlength=n)
    starts = np.arange(n) * width + 1
    return pd.DataFrame({"bin_start": starts, "bin_end": np.minimum(starts + width - 1, top),
                         "share": per_bin / cnt.sum()})


def length_summary(lengths, counts=None) -> pd.DataFrame:
    """Sequences, 10th/50th/90th percentile length, longest, and the share at the longest.

    Returns
    -------
    pandas.DataFrame
        One row: ``n_sequences``, ``p10_tokens``, ``median_tokens``, ``p90_tokens``
        (lengths below which 10 / 50 / 90 % of sequences fall, the smallest such
        length), ``longest_tokens`` and ``share_at_longest``.

    Examples
    --------
    >>> length_summary([1, 2, 3, 4, 4]).iloc[0].tolist()
    [5.0, 1.0, 3.0, 4.0, 4.0, 0.4]
    """
    values, cnt = _histogram(lengths, counts)
    cum = np.cumsum(cnt) / cnt.sum()
    pick = lambda q: int(values[np.searchsorted(cum, q - 1e-12)])  # noqa: E731
    return pd.DataFrame([{"n_sequences": int(cnt.sum()), "p10_tokens": pick(0.1),
                          "median_tokens": pick(0.5), "p90_tokens": pick(0.9),
                          "longest_tokens": int(values[-1]),
                          "share_at_longest": float(cnt[-1] / cnt.sum())}])


def length_histogram(name: str = "wikipedia-bert-512") -> pd.DataFrame:
    """A published sequence-length histogram from ``data/length_histograms.csv``.

    ``"wikipedia-bert-512"``: the BERT pre-training Wikipedia dataset at maximum
    length 512 (16,279,552 sequences; the last bin holds every sequence truncated
    to 512). ``"squad-1.1-384"``: SQuAD 1.1 fine-tuning at 384. Both from [4]_.

    Returns
    -------
    pandas.DataFrame
        ``n_tokens``, ``n_sequences`` (only non-empty bins), ``source_id``.

    Examples
    --------
    >>> h = length_histogram()
    >>> int(h.n_sequences.sum()), int(h.n_tokens.max())
    (16279552, 512)
    """
    name = choice("name", name, HISTOGRAMS)
    df = specs.read_data_csv("length_histograms.csv")
    df = df[(df["dataset"] == name) & (df["n_sequences"] > 0)]
    return df[["n_tokens", "n_sequences", "source_id"]].reset_index(drop=True)


# ------------------------------------------------------------ graphs and keys

@dataclass(frozen=True)
class GraphSpec:
    """What makes one traced training step a distinct graph (a model of it).

    The XLA graph is determined by the operations and by every shape in them, and
    by constants baked into it. This model keeps the fields that usually change:
    ``batch_size`` and ``seq_len`` (input shapes), ``variant`` (a different code
    path: a branch, an extra ``mark_step``, a ``.item()`` that cuts the graph) and
    ``constants`` (Python numbers traced in as constants, e.g. a learning rate
    passed as a float rather than a tensor).
    """

    batch_size: int
    seq_len: int
    variant: str = "train step"
    constants: str = ""

    def __post_init__(self):
        integer("batch_size", self.batch_size, minimum=1, maximum=MAX_SAMPLES)
        integer("seq_len", self.seq_len, minimum=1, maximum=MAX_TOKENS)
        for name in ("variant", "constants"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be text, got {type(getattr(self, name)).__name__}")

    def text(self) -> str:
        """A canonical description, the stand-in for the serialized HLO that is hashed."""
        extra = f"; constants {self.constants}" if self.constants else ""
        return f"{self.variant}: input[{self.batch_size}, {self.seq_len}]{extra}"


@dataclass(frozen=True)
class CompileEnv:
    """The compile environment that keys the cache besides the graph.

    ``compiler_version`` (the neuronx-cc release; the cache keeps one directory per
    version [1]_), ``flags`` (the ``NEURON_CC_FLAGS`` text, e.g.
    ``"--auto-cast=matmult"``) and ``lnc`` (passed to the compiler as ``--lnc``;
    the LNC page requires the compiler setting to match the runtime's
    ``NEURON_LOGICAL_NC_CONFIG``). ``lnc=None`` leaves it to the compiler default.
    """

    compiler_version: str = "2.22"
    flags: str = ""
    lnc: int | None = None

    def __post_init__(self):
        for name in ("compiler_version", "flags"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be text, got {type(getattr(self, name)).__name__}")
        if not self.compiler_version.strip():
            raise ValueError("compiler_version must be non-empty text, e.g. '2.22'")
        if self.lnc is not None:
            choice("lnc", self.lnc, (1, 2))

    def flags_text(self) -> str:
        """The flag string the compiler sees: ``flags`` plus ``--lnc=N`` when LNC is set."""
        parts = [self.flags.strip()] if self.flags.strip() else []
        if self.lnc is not None:
            parts.append(f"--lnc={self.lnc}")
        return " ".join(parts)


def graph_hash(graph: GraphSpec) -> str:
    """A 64-bit decimal hash of a graph's canonical text (the ``MODULE_<n>`` part).

    SHA-256 of :meth:`GraphSpec.text`, first 8 bytes as an unsigned integer: any
    change in a shape or a variant gives a different number. (torch-xla computes
    its own graph hash; this is a stand-in with the same property.)

    Examples
    --------
    >>> graph_hash(GraphSpec(32, 512)) == graph_hash(GraphSpec(32, 512))
    True
    >>> graph_hash(GraphSpec(32, 512)) == graph_hash(GraphSpec(31, 512))
    False
    """
    if not isinstance(graph, GraphSpec):
        raise ValueError(f"graph must be a GraphSpec, got {type(graph).__name__}")
    digest = hashlib.sha256(graph.text().encode("utf-8")).digest()
    return str(int.from_bytes(digest[:8], "big"))


def flags_hash(flags: str) -> str:
    """First 8 hex digits of the MD5 of a flag string (the ``+xxxxxxxx`` part).

    The Neuron cache paths in AWS's examples end in ``+d41d8cd9`` for a run with no
    extra flags [1]_; ``d41d8cd9`` is the start of the MD5 of the empty string,
    which is consistent with the flag string being hashed that way. The docs say
    only that the key hashes the flags; the hash function is an inference.

    Examples
    --------
    >>> flags_hash("")
    'd41d8cd9'
    >>> flags_hash("--auto-cast=matmult") == flags_hash("")
    False
    """
    if not isinstance(flags, str):
        raise ValueError(f"flags must be text, got {type(flags).__name__}")
    return hashlib.md5(flags.encode("utf-8"), usedforsecurity=False).hexdigest()[:8]


def cache_key(graph: GraphSpec, env: CompileEnv | None = None) -> str:
    """The cache entry a graph compiles into: ``neuronxcc-<version>/MODULE_<graph>+<flags>``.

    Mirrors the layout of the Neuron Persistent Cache [1]_: one directory per
    compiler version, one entry per (graph hash, flags hash). Two steps share a
    NEFF only if all three agree.

    Examples
    --------
    >>> cache_key(GraphSpec(32, 512)).split("/")[0]
    'neuronxcc-2.22'
    >>> cache_key(GraphSpec(32, 512)).endswith("+d41d8cd9")
    True
    """
    env = CompileEnv() if env is None else env
    if not isinstance(env, CompileEnv):
        raise ValueError(f"env must be a CompileEnv, got {type(env).__name__}")
    return (f"neuronxcc-{env.compiler_version}/MODULE_{graph_hash(graph)}"
            f"+{flags_hash(env.flags_text())}")


#: (what changed, how it changes the graph or environment) for :func:`cache_key_changes`
_CHANGES: tuple[tuple[str, dict, dict], ...] = (
    ("nothing (the same step again)", {}, {}),
    ("last batch of the epoch is smaller (batch 32 → 8)", {"batch_size": 8}, {}),
    ("a longer sequence bucket (512 → 1024)", {"seq_len": 1024}, {}),
    ("learning rate traced as a Python float that changes (3e-4 → 2.9e-4)",
     {"constants": "lr=0.00029"}, {}),
    ("an extra mark_step / .item() cuts the step in two", {"variant": "train step, part 1 of 2"}, {}),
    ("a branch taken on some ranks (loss-spike guard)", {"variant": "train step + spike guard"}, {}),
    ("compiler flag added (--auto-cast=matmult)", {}, {"flags": "--auto-cast=matmult"}),
    ("optimisation level changed (-O1)", {}, {"flags": "-O1"}),
    ("LNC 2 → 1 (passed as --lnc)", {}, {"lnc": 1}),
    ("Neuron SDK upgrade (compiler 2.22 → 2.24)", {}, {"compiler_version": "2.24"}),
)


def cache_key_changes(graph: GraphSpec | None = None, env: CompileEnv | None = None) -> pd.DataFrame:
    """What each common change does to the cache key of one training step.

    Parameters
    ----------
    graph : GraphSpec, optional
        The baseline step (default: batch 32, sequence 512, learning rate 3e-4 as a constant).
    env : CompileEnv, optional
        The baseline environment (default: compiler 2.22, no extra flags, ``--lnc=2``).

    Returns
    -------
    pandas.DataFrame
        ``change``, ``key``, ``graph_changed``, ``flags_changed``, ``version_changed``,
        ``recompile`` (any of the three).

    Examples
    --------
    >>> df = cache_key_changes()
    >>> int(df.recompile.sum()), bool(df.recompile.iloc[0])
    (9, False)
    """
    graph = GraphSpec(32, 512, constants="lr=0.0003") if graph is None else graph
    env = CompileEnv(lnc=2) if env is None else env
    base = cache_key(graph, env)
    b_dir, b_rest = base.split("/")
    b_graph, b_flags = b_rest.split("+")
    rows = []
    for label, g_change, e_change in _CHANGES:
        key = cache_key(replace(graph, **g_change), replace(env, **e_change))
        k_dir, k_rest = key.split("/")
        k_graph, k_flags = k_rest.split("+")
        row = {"change": label, "key": key, "graph_changed": k_graph != b_graph,
               "flags_changed": k_flags != b_flags, "version_changed": k_dir != b_dir}
        row["recompile"] = row["graph_changed"] or row["flags_changed"] or row["version_changed"]
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------- a training run

def step_stream(n_samples: int, batch_size: int, *, n_epochs: int = 1, lengths=None,
                buckets=None, pad_to: int | None = None, drop_last: bool = False,
                group_by_length: bool = False, branch_every: int = 0, branch_ranks: str = "rank 0",
                branch_variant: str = "train step + spike guard", seed: int = 0) -> pd.DataFrame:
    """The graph every step of a run traces: its batch size, sequence length and variant.

    Each epoch visits the samples in a seeded random order in batches of
    ``batch_size``; the last batch is smaller unless ``drop_last``. A batch's
    sequence length is its longest sample, padded to its bucket (``buckets``), to
    ``pad_to``, or left as it is (dynamic shapes). With ``group_by_length`` (and
    ``buckets``), batches are formed inside each bucket (a length-grouped sampler), so
    every bucket has full batches and its own smaller last batch. Every ``branch_every``-th step,
    the ranks in ``branch_ranks`` take a different code path (a second row for that
    step).

    Parameters
    ----------
    n_samples : int
        Samples per epoch (1 to 1e8).
    batch_size : int
        Samples per step (>= 1).
    n_epochs : int
        Epochs (1 to 1000).
    lengths : sequence of int, optional
        Length of each sample (``n_samples`` values); default: every sample is ``pad_to`` long.
    buckets : sequence of int, optional
        Pad each batch to the smallest bucket that fits.
    pad_to : int, optional
        Pad every batch to this length (needs lengths <= it).
    drop_last : bool
        Drop the last, smaller batch of each epoch (of each bucket, when grouping).
    group_by_length : bool
        Form batches from samples of the same bucket (needs ``buckets``); the batch
        order is then shuffled.
    branch_every : int
        0 for no branch; otherwise the period (in steps) of the branch.
    branch_ranks : {"rank 0", "all ranks"}
        Who takes the branch.
    seed : int
        Seed of the shuffling.

    Returns
    -------
    pandas.DataFrame
        ``step`` (0-based, global), ``epoch``, ``batch_size``, ``seq_len``,
        ``variant``, ``ranks`` ("all ranks", "rank 0" or "other ranks").

    Examples
    --------
    >>> s = step_stream(100, 32, pad_to=128)
    >>> s.batch_size.tolist(), s.seq_len.unique().tolist()
    ([32, 32, 32, 4], [128])
    """
    n_samples = integer("n_samples", n_samples, minimum=1, maximum=MAX_SAMPLES)
    batch_size = integer("batch_size", batch_size, minimum=1, maximum=MAX_SAMPLES)
    n_epochs = integer("n_epochs", n_epochs, minimum=1, maximum=1000)
    branch_every = integer("branch_every", branch_every, minimum=0, maximum=MAX_SAMPLES)
    branch_ranks = choice("branch_ranks", branch_ranks, ("rank 0", "all ranks"))
    if not isinstance(branch_variant, str) or not branch_variant:
        raise ValueError("branch_variant must be non-empty text")
    if not isinstance(drop_last, (bool, np.bool_)):
        raise ValueError(f"drop_last must be True or False, got {drop_last!r}")
    seed = integer("seed", seed, minimum=0, maximum=2**63 - 1)
    if pad_to is not None:
        pad_to = integer("pad_to", pad_to, minimum=1, maximum=MAX_TOKENS)
    if lengths is None:
        if pad_to is None:
            raise ValueError("pad_to must be given (an integer >= 1) when lengths is not")
        lens = np.full(n_samples, pad_to, dtype=np.int64)
    else:
        lens = _int_array("lengths", lengths, minimum=1, maximum=MAX_TOKENS, max_size=MAX_SAMPLES)
        if lens.size != n_samples:
            raise ValueError(f"lengths must have n_samples={n_samples} values, got {lens.size}")
    if pad_to is not None and lens.max() > pad_to:
        raise ValueError(f"pad_to={pad_to} is shorter than the longest sample ({int(lens.max())})")
    b = None if buckets is None else _buckets(buckets)
    if b is not None and lens.max() > b[-1]:
        raise ValueError(f"buckets: the largest ({int(b[-1])}) is shorter than the longest "
                         f"sample ({int(lens.max())})")
    if not isinstance(group_by_length, (bool, np.bool_)):
        raise ValueError(f"group_by_length must be True or False, got {group_by_length!r}")
    if group_by_length and b is None:
        raise ValueError("group_by_length needs buckets (a sequence of bucket lengths)")
    n_full, rest = divmod(n_samples, batch_size)
    if drop_last and n_full == 0:
        raise ValueError(f"drop_last with batch_size={batch_size} > n_samples={n_samples} "
                         "leaves no step")
    n_steps = n_full + (0 if drop_last or rest == 0 else 1)
    if n_steps * n_epochs > 10**7:
        raise ValueError(f"the run has {n_steps * n_epochs:,} steps; at most 10,000,000 are modelled")
    rng = np.random.default_rng(seed)
    frames = []
    for epoch in range(n_epochs):
        order = lens[rng.permutation(n_samples)]
        if group_by_length:
            which = np.searchsorted(b, order, side="left")
            sizes_l, seq_l = [], []
            for i, bucket in enumerate(b):
                n_in = int((which == i).sum())
                full, part = divmod(n_in, batch_size)
                sizes_l += [batch_size] * full + ([part] if part and not drop_last else [])
                seq_l += [int(bucket)] * (full + (1 if part and not drop_last else 0))
            shuffle = rng.permutation(len(sizes_l))
            sizes = np.asarray(sizes_l, dtype=np.int64)[shuffle]
            seq = np.asarray(seq_l, dtype=np.int64)[shuffle]
        else:
            starts = np.arange(n_steps) * batch_size
            longest = np.maximum.reduceat(order, starts)
            sizes = np.minimum(batch_size, n_samples - starts)
            if b is not None:
                seq = b[np.searchsorted(b, longest, side="left")]
            elif pad_to is not None:
                seq = np.full(n_steps, pad_to, dtype=np.int64)
            else:
                seq = longest
        frames.append(pd.DataFrame({"epoch": epoch, "batch_size": sizes, "seq_len": seq}))
    df = pd.concat(frames, ignore_index=True)
    df.insert(0, "step", np.arange(len(df)))
    df["variant"] = "train step"
    df["ranks"] = "all ranks"
    if branch_every:
        hit = df["step"] % branch_every == branch_every - 1
        extra = df[hit].copy()
        extra["variant"] = branch_variant
        if branch_ranks == "rank 0":
            extra["ranks"] = "rank 0"
            df.loc[hit, "ranks"] = "other ranks"
        else:
            extra["ranks"] = "all ranks"
            df = df[~hit]
        df = pd.concat([df, extra]).sort_values(["step", "ranks"], kind="stable")
    return df.reset_index(drop=True)


@dataclass(frozen=True, repr=False)
class RunCompiles:
    """Compiles of one run: the event log, the totals and the cache it leaves behind.

    ``events``: one row per (step, graph) that compiled or came from the cache the
    first time this run met it. ``stall_s``: wall-clock seconds the whole job waits
    (a synchronous step cannot finish while any node compiles). ``node_compile_s``:
    compile seconds summed over nodes (what the compile costs in machine time).
    """

    events: pd.DataFrame
    n_steps: int
    n_graphs: int
    n_compiles: int
    stall_s: float
    node_compile_s: float
    cache_keys: frozenset

    def __repr__(self) -> str:  # the key set's order varies between processes: not shown
        return (f"RunCompiles(n_steps={self.n_steps}, n_graphs={self.n_graphs}, "
                f"n_compiles={self.n_compiles}, stall_s={self.stall_s:g}, "
                f"node_compile_s={self.node_compile_s:g}, cache_keys=<{len(self.cache_keys)} keys>)")

    def _repr_markdown_(self) -> str:
        return (f"{self.n_steps:,} steps, **{self.n_graphs}** distinct graphs, "
                f"**{self.n_compiles}** compiles (node-level); the job stalls "
                f"**{self.stall_s / minute:,.0f} min** and spends "
                f"**{self.node_compile_s / minute:,.0f} node-min** compiling.")


def _keys_of(stream: pd.DataFrame, env: CompileEnv) -> list[str]:
    need = {"batch_size", "seq_len", "variant"}
    if not isinstance(stream, pd.DataFrame) or not need <= set(stream.columns):
        raise ValueError("stream must be a DataFrame from step_stream (columns batch_size, "
                         "seq_len, variant, ranks, step)")
    cache: dict[tuple, str] = {}
    out = []
    for bsz, seq, var in zip(stream["batch_size"], stream["seq_len"], stream["variant"]):
        t = (int(bsz), int(seq), str(var))
        if t not in cache:
            cache[t] = cache_key(GraphSpec(*t), env)
        out.append(cache[t])
    return out


def trial_run_keys(stream: pd.DataFrame, n_steps: int, env: CompileEnv | None = None) -> frozenset:
    """Cache keys a short trial run of the first ``n_steps`` steps extracts.

    ``neuron_parallel_compile`` runs the script for a few steps (AWS suggests
    10-15) to collect its graphs, then compiles them in parallel [2]_; graphs the
    trial does not reach (the last batch of an epoch, a branch at step 1,000) are
    not in it and compile later, during the real run.

    Examples
    --------
    >>> s = step_stream(100, 32, pad_to=128)
    >>> len(trial_run_keys(s, 2)), len(trial_run_keys(s, 4))
    (1, 2)
    """
    n_steps = integer("n_steps", n_steps, minimum=0, maximum=10**7)
    env = CompileEnv() if env is None else env
    keys = _keys_of(stream, env)
    steps = stream["step"].to_numpy()
    return frozenset(k for k, s in zip(keys, steps) if s < n_steps)


def parallel_precompile_s(n_graphs: int, compile_s: float, n_workers: int) -> float:
    """Wall time to compile ``n_graphs`` graphs with ``n_workers`` parallel compiler processes.

    ``ceil(n_graphs / n_workers) × compile_s``, every graph taking ``compile_s``
    (an assumption). The number of parallel workers is an input: the AWS page
    describes parallel processes but not how many (host CPUs and memory limit it).

    Examples
    --------
    >>> parallel_precompile_s(10, 600, 4)
    1800.0
    """
    n_graphs = integer("n_graphs", n_graphs, minimum=0, maximum=10**7)
    compile_s = positive("compile_s", compile_s, allow_zero=True)
    if compile_s > 1e12:
        raise ValueError(f"compile_s must be at most 1e12, got {compile_s:g}")
    n_workers = integer("n_workers", n_workers, minimum=1, maximum=10**6)
    return math.ceil(n_graphs / n_workers) * compile_s


def run_compiles(stream: pd.DataFrame, *, compile_s: float, n_nodes: int = 1,
                 env: CompileEnv | None = None, shared_cache: bool = False,
                 warm_keys: Iterable[str] = (), n_fresh_nodes: int | None = None) -> RunCompiles:
    """Which steps compile, on how many nodes, and what the run loses waiting.

    Every process keeps compiled graphs for the rest of the run (the in-memory JIT
    cache); the persistent cache holds ``warm_keys`` before the run starts.

    * ``shared_cache=True`` (``NEURON_COMPILE_CACHE_URL`` on S3 or a shared file
      system): every node sees ``warm_keys``.
    * ``shared_cache=False`` (each node's local ``/var/tmp/neuron-compile-cache``):
      only nodes that ran before have them; ``n_fresh_nodes`` nodes (replacements,
      new hosts; default all nodes when ``warm_keys`` is empty) start empty.

    A graph first met at a step compiles on every node that runs it and misses its
    cache; nodes compile in parallel, graphs new at the same step compile in parallel
    (each rank is its own process), graphs new at different steps one after another,
    and the synchronous job waits one compile time at every step where any node compiles. Simultaneous misses on
    different nodes are all counted as compiles: AWS's pages do not say that nodes
    sharing a cache wait for one another's compile.

    Parameters
    ----------
    stream : pandas.DataFrame
        From :func:`step_stream`.
    compile_s : float
        Seconds to compile one graph (>= 0; an assumption).
    n_nodes : int
        Nodes (instances) in the job; "rank 0" runs on node 0.
    env : CompileEnv, optional
        Compiler version, flags and LNC (they are part of every key).
    shared_cache : bool
        Whether the persistent cache is shared by all nodes.
    warm_keys : iterable of str
        Keys already in the persistent cache (e.g. ``previous_run.cache_keys`` or
        :func:`trial_run_keys`).
    n_fresh_nodes : int, optional
        Nodes with an empty local cache (only without a shared cache).

    Returns
    -------
    RunCompiles

    Examples
    --------
    >>> s = step_stream(100, 32, pad_to=128, n_epochs=3)
    >>> cold = run_compiles(s, compile_s=600, n_nodes=4)
    >>> cold.n_graphs, cold.n_compiles, cold.stall_s, cold.node_compile_s
    (2, 8, 1200.0, 4800.0)
    >>> run_compiles(s, compile_s=600, n_nodes=4, shared_cache=True, warm_keys=cold.cache_keys).stall_s
    0.0
    """
    compile_s = positive("compile_s", compile_s, allow_zero=True)
    if compile_s > 1e12:
        raise ValueError(f"compile_s must be at most 1e12, got {compile_s:g}")
    n_nodes = integer("n_nodes", n_nodes, minimum=1, maximum=100_000)
    if not isinstance(shared_cache, (bool, np.bool_)):
        raise ValueError(f"shared_cache must be True or False, got {shared_cache!r}")
    env = CompileEnv() if env is None else env
    if not isinstance(env, CompileEnv):
        raise ValueError(f"env must be a CompileEnv, got {type(env).__name__}")
    if isinstance(warm_keys, (str, bytes)):
        raise ValueError("warm_keys must be a collection of keys, not one string")
    try:
        warm = frozenset(warm_keys)
    except TypeError:
        raise ValueError("warm_keys must be an iterable of cache keys") from None
    if n_fresh_nodes is None:
        n_fresh = n_nodes if not warm else 0
    else:
        n_fresh = integer("n_fresh_nodes", n_fresh_nodes, minimum=0, maximum=n_nodes)
    if shared_cache:
        n_fresh = 0 if warm else n_fresh
    keys = _keys_of(stream, env)
    seen: set[str] = set()
    rows = []
    for (step, bsz, seq, var, ranks), key in zip(
            stream[["step", "batch_size", "seq_len", "variant", "ranks"]].itertuples(index=False),
            keys):
        if key in seen:
            continue
        seen.add(key)
        # every node hosts ranks of "all"/"other ranks"; rank 0 lives on node 0, a kept node
        nodes = 1 if ranks == "rank 0" else n_nodes
        if key not in warm:
            compiling = nodes
        elif shared_cache:
            compiling = 0
        elif ranks == "rank 0":
            compiling = int(n_fresh == n_nodes)
        else:
            compiling = n_fresh
        rows.append({"step": int(step), "graph": GraphSpec(int(bsz), int(seq), str(var)).text(),
                     "ranks": ranks, "key": key, "nodes_compiling": compiling,
                     "event": "compile" if compiling else "cache hit"})
    events = pd.DataFrame(rows, columns=["step", "graph", "ranks", "key", "nodes_compiling", "event"])
    # each rank is its own process: graphs new at one step compile in parallel, and the
    # synchronous job waits one compile time at every step where any node compiles
    compile_steps = events.loc[events["nodes_compiling"] > 0, "step"].nunique()
    n_compiles = int(events["nodes_compiling"].sum())
    return RunCompiles(events, int(stream["step"].nunique()), len(seen), n_compiles,
                       compile_steps * compile_s, n_compiles * compile_s, frozenset(seen) | warm)


# ---------------------------------------------------------------- sourced facts

def compiler_facts(topic: str | None = None) -> pd.DataFrame:
    """Sourced statements about neuronx-cc, the Neuron cache and the JAX cache.

    From ``data/compiler_facts.csv``: each row a fact with its value, unit, status
    (``used``, or ``alternative`` where another AWS page says something else) and
    source.

    Parameters
    ----------
    topic : str, optional
        Keep one topic (``"neuronx-cc"``, ``"neuron cache"``, ``"neuron_parallel_compile"``,
        ``"neuron runtime"``, ``"torch-neuronx"``, ``"torchneuron"``, ``"jax neuronx"``,
        ``"jax cache"``, ``"neuron logs"``, ``"neuron scale"``, ``"neuron docs"``).

    Examples
    --------
    >>> f = compiler_facts("neuron cache")
    >>> f.set_index("fact").value["default cache directory"]
    '/var/tmp/neuron-compile-cache'
    """
    df = specs.read_data_csv("compiler_facts.csv")
    if topic is not None:
        topic = choice("topic", topic, tuple(dict.fromkeys(df["topic"])))
        df = df[df["topic"] == topic]
    return df.reset_index(drop=True)
