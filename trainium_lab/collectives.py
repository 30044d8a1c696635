"""What a collective costs: ring formulas, hierarchical all-reduce, benchmark bandwidths.

Every cost here is the alpha-beta model: a collective over ``n`` participants that
moves ``S`` bytes takes (bytes each participant sends) / ``B`` plus (number of
sequential steps) × ``α``. ``B`` is the bandwidth one participant can send at and
``α`` the per-step latency. The model ignores contention, link direction and
protocol overheads, so it is a first-order estimate: measure before you commit.

Public API (used by later chapters, e.g. the parallel-layout planner)
---------------------------------------------------------------------
Formulas, all in base units (bytes, bytes/s, s):

``ring_allreduce_s(size_bytes, n, bandwidth_bytes_per_s, latency_s=0.0)``
    2(n−1)/n · S/B + 2(n−1)·α.
``ring_reduce_scatter_s(...)``, ``ring_allgather_s(...)``
    (n−1)/n · S/B + (n−1)·α each; ``S`` is the full (unsharded) buffer.
``ring_all_to_all_s(...)``, ``direct_all_to_all_s(...)``
    All-to-all where each participant holds ``S`` bytes, ``S/n`` for each peer:
    (n−1)/2 · S/B on a ring (messages travel several hops), (n−1)/n · S/B through
    a switch.
``collective_s(collective, size_bytes, n, bandwidth_bytes_per_s, latency_s=0.0)``
    Dispatch by name: one of ``COLLECTIVES``.
``hierarchical_allreduce_s(size_bytes, levels)``
    Reduce-scatter inside each level, all-reduce across the top one, all-gather back.
``algbw_bytes_per_s``, ``busbw_bytes_per_s``, ``bus_factor``
    Algorithm and bus bandwidth, as nccl-tests and the Neuron ``nccom-test`` define them.
``nccom_test_cases() -> DataFrame``
    The runs printed in AWS's nccom-test user guide (``data/nccom_test_cases.csv``), with
    the bandwidths recomputed from size and time.
``latency_crossover_bytes(n, bandwidth_bytes_per_s, latency_s)``
    The size below which the latency term is larger than the bandwidth term.

Placed groups (from :func:`trainium_lab.topology.place`):

``group_collective_s(placement, kind, size_bytes, collective="all_reduce", latency_s=None)``
    Cost of one collective in every group of ``kind`` ("tp", "pp", "dp", "ep"),
    run as a ring over the group's chips at the speed of the slowest level the
    group crosses. ``size_bytes`` is per rank.
``level_collective_s(size_bytes, n_chips, level, system, collective="all_reduce")``
    The same cost for a group whose level and chip count are already known.
``placement_costs(placement, size_bytes, collective="all_reduce") -> DataFrame``
    One row per kind with level, bandwidth (scope and direction) and time.

References
----------
R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005 (ring reduce-scatter / all-gather /
all-reduce costs). P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms
for clusters of workstations", JPDC 69(2), 2009 (ring all-reduce is bandwidth
optimal). A. Grama et al., *Introduction to Parallel Computing*, 2nd ed., 2003,
§4.5 (all-to-all personalized communication on a ring). X. Jia et al., "Highly
Scalable Deep Learning Training System with Mixed-Precision", arXiv:1807.11205,
2018 (hierarchical all-reduce). NVIDIA nccl-tests, ``doc/PERFORMANCE.md``
(definitions of algorithm and bus bandwidth; formulas only, no worked numbers). AWS
Neuron docs, "NCCOM-TEST" user guide (the Trainium benchmark's printed runs; its
"GB/s" columns are gibibytes per second).

Examples
--------
>>> from trainium_lab import specs
>>> act = 2 * 4096 * 16384  # one BF16 activation block, seq 4096 x hidden 16384
>>> round(ring_allreduce_s(act, 16, specs.link("trn2-neuronlink-intra").bytes_per_s) * 1e3, 2)
0.25
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import choice, in_range, instance, integer, positive, sequence
from trainium_lab.units import GB, GiB, us

__all__ = [
    "COLLECTIVES", "ring_allreduce_s", "ring_reduce_scatter_s", "ring_allgather_s",
    "ring_all_to_all_s", "direct_all_to_all_s", "collective_s", "hierarchical_allreduce_s",
    "bus_factor", "algbw_bytes_per_s", "busbw_bytes_per_s", "nccom_test_cases",
    "latency_crossover_bytes",
    "ring_allreduce_steps", "size_sweep", "group_collective_s", "placement_costs",
    "level_collective_s", "CollectiveCost", "neuron_collective", "NEURON_ALGORITHMS",
    "MESH_MAX_BYTES", "RDH_MAX_BYTES",
]


def _check(size_bytes: float, n: int, bandwidth_bytes_per_s: float, latency_s: float):
    return (positive("size_bytes", size_bytes, allow_zero=True), integer("n", n, minimum=1),
            positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s),
            positive("latency_s", latency_s, allow_zero=True))


def ring_allreduce_s(size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                     latency_s: float = 0.0) -> float:
    """Seconds for a ring all-reduce: 2(n−1)/n · S/B + 2(n−1)·α.

    The buffer is cut into ``n`` chunks. In ``n−1`` reduce-scatter steps each
    participant sends one chunk to its neighbour and adds the chunk it receives;
    afterwards each owns one fully reduced chunk. In ``n−1`` all-gather steps the
    reduced chunks travel round the ring. Each participant sends
    2(n−1) chunks of ``S/n`` bytes.

    Parameters
    ----------
    size_bytes : float
        Bytes in each participant's buffer (>= 0).
    n : int
        Participants (>= 1); ``n = 1`` costs nothing.
    bandwidth_bytes_per_s : float
        What one participant can send per second (> 0).
    latency_s : float
        Per-step latency α (>= 0).

    Returns
    -------
    float
        Seconds.

    References
    ----------
    Thakur, Rabenseifner and Gropp (2005), §4; Patarasuk and Yuan (2009).

    Examples
    --------
    >>> ring_allreduce_s(1e9, 4, 1e9)   # 2 · 3/4 · 1 s
    1.5
    >>> ring_allreduce_s(1e9, 4, 1e9, latency_s=1e-3)
    1.506
    """
    s, n, b, a = _check(size_bytes, n, bandwidth_bytes_per_s, latency_s)
    return 2 * (n - 1) / n * s / b + 2 * (n - 1) * a


def ring_reduce_scatter_s(size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                          latency_s: float = 0.0) -> float:
    """Seconds for a ring reduce-scatter of an ``S``-byte buffer: (n−1)/n · S/B + (n−1)·α.

    Each participant ends with ``S/n`` reduced bytes. Parameters as in
    :func:`ring_allreduce_s`.

    References
    ----------
    Thakur, Rabenseifner and Gropp (2005), §4.

    Examples
    --------
    >>> ring_reduce_scatter_s(1e9, 4, 1e9)
    0.75
    """
    s, n, b, a = _check(size_bytes, n, bandwidth_bytes_per_s, latency_s)
    return (n - 1) / n * s / b + (n - 1) * a


def ring_allgather_s(size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                     latency_s: float = 0.0) -> float:
    """Seconds for a ring all-gather into an ``S``-byte buffer: (n−1)/n · S/B + (n−1)·α.

    ``size_bytes`` is the gathered (full) size; each participant starts with ``S/n``.

    References
    ----------
    Thakur, Rabenseifner and Gropp (2005), §4.

    Examples
    --------
    >>> ring_allgather_s(1e9, 4, 1e9) + ring_reduce_scatter_s(1e9, 4, 1e9) == ring_allreduce_s(1e9, 4, 1e9)
    True
    """
    s, n, b, a = _check(size_bytes, n, bandwidth_bytes_per_s, latency_s)
    return (n - 1) / n * s / b + (n - 1) * a


def ring_all_to_all_s(size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                      latency_s: float = 0.0) -> float:
    """Seconds for an all-to-all on a one-way ring: (n−1)/2 · S/B + (n−1)·α.

    Each participant holds ``S`` bytes, ``S/n`` for each peer. A message to the peer
    ``d`` hops away crosses ``d`` links, so each link carries
    Σ_{d=1}^{n−1} d·S/n = (n−1)/2 · S bytes: ``n/2`` times what a switch would need
    (:func:`direct_all_to_all_s`).

    References
    ----------
    Grama et al. (2003), §4.5.1: t = (t_s + t_w·m·p/2)(p−1) with m = S/n.

    Examples
    --------
    >>> ring_all_to_all_s(1e9, 4, 1e9)
    1.5
    """
    s, n, b, a = _check(size_bytes, n, bandwidth_bytes_per_s, latency_s)
    return (n - 1) / 2 * s / b + (n - 1) * a


def direct_all_to_all_s(size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                        latency_s: float = 0.0) -> float:
    """Seconds for an all-to-all through a switch: (n−1)/n · S/B + (n−1)·α.

    Each participant sends ``S/n`` to each of ``n−1`` peers straight through its own
    port; the switch is assumed non-blocking. The latency term assumes one
    exchange per peer, in sequence.

    References
    ----------
    Grama et al. (2003), §4.5 (pairwise exchange on a fully connected network).

    Examples
    --------
    >>> direct_all_to_all_s(1e9, 4, 1e9)
    0.75
    """
    s, n, b, a = _check(size_bytes, n, bandwidth_bytes_per_s, latency_s)
    return (n - 1) / n * s / b + (n - 1) * a


#: collective name -> cost function (size_bytes, n, bandwidth_bytes_per_s, latency_s)
COLLECTIVES: dict[str, Callable[..., float]] = {
    "all_reduce": ring_allreduce_s,
    "reduce_scatter": ring_reduce_scatter_s,
    "all_gather": ring_allgather_s,
    "all_to_all": ring_all_to_all_s,
    "all_to_all_direct": direct_all_to_all_s,
}


def collective_s(collective: str, size_bytes: float, n: int, bandwidth_bytes_per_s: float,
                 latency_s: float = 0.0) -> float:
    """Seconds for the collective called ``collective`` (a key of ``COLLECTIVES``).

    Examples
    --------
    >>> collective_s("reduce_scatter", 1e9, 4, 1e9)
    0.75
    """
    collective = choice("collective", collective, COLLECTIVES)
    return COLLECTIVES[collective](size_bytes, n, bandwidth_bytes_per_s, latency_s)


def hierarchical_allreduce_s(size_bytes: float,
                             levels: Sequence[tuple[int, float] | tuple[int, float, float]]) -> float:
    """Seconds for an all-reduce done level by level, innermost level first.

    With levels ``(n_0, B_0, α_0), (n_1, B_1, α_1), …``: reduce-scatter the ``S``
    bytes inside level 0 (each participant keeps ``S/n_0``), recurse on that shard
    across the next level, all-reduce it across the outermost level, then
    all-gather back down. Each slow level then carries only a ``1/(n_0 n_1 …)``
    share of the data. With one level this is :func:`ring_allreduce_s`.

    Parameters
    ----------
    size_bytes : float
        Bytes per participant.
    levels : sequence of (n, bandwidth_bytes_per_s) or (n, bandwidth_bytes_per_s, latency_s)
        Participants and per-participant bandwidth at each level, fastest
        (innermost) first.

    References
    ----------
    Jia et al. (2018), §4 (hierarchical all-reduce); Thakur et al. (2005).

    Examples
    --------
    >>> hierarchical_allreduce_s(1e9, [(4, 1e9)]) == ring_allreduce_s(1e9, 4, 1e9)
    True
    >>> round(hierarchical_allreduce_s(1e9, [(4, 4e9), (2, 1e9)]), 4)   # 2·(3/4)/4 + 2·(1/2)/4
    0.625
    """
    size = positive("size_bytes", size_bytes, allow_zero=True)
    def level(name, lv):
        if isinstance(lv, (str, bytes)) or not isinstance(lv, (tuple, list)) or len(lv) not in (2, 3):
            raise ValueError(f"{name} must be (n, bandwidth_bytes_per_s[, latency_s]); got {lv!r}")
        return lv

    levels = sequence("levels", levels, level)
    total = 0.0
    for i, lv in enumerate(levels):
        if len(lv) not in (2, 3):
            raise ValueError(f"levels[{i}] must be (n, bandwidth_bytes_per_s[, latency_s]); got {lv!r}")
        n, b = lv[0], lv[1]
        a = lv[2] if len(lv) == 3 else 0.0
        if i == len(levels) - 1:
            total += ring_allreduce_s(size, n, b, a)
        else:
            total += ring_reduce_scatter_s(size, n, b, a) + ring_allgather_s(size, n, b, a)
            size = size / integer("n", n, minimum=1)
    return total


# --------------------------------------------------------------------- benchmark bandwidths

_BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "reduce_scatter": lambda n: (n - 1) / n,
        "all_gather": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
        "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}


def bus_factor(collective: str, n: int) -> float:
    """The factor from algorithm to bus bandwidth.

    2(n−1)/n for all-reduce; (n−1)/n for reduce-scatter, all-gather and
    all-to-all; 1 for broadcast and reduce.

    References
    ----------
    NVIDIA nccl-tests, ``doc/PERFORMANCE.md`` (the definitions; AWS's nccom-test user
    guide points to it for busbw).

    Examples
    --------
    >>> bus_factor("all_reduce", 16)
    1.875
    """
    collective = choice("collective", collective, _BUS)
    return _BUS[collective](integer("n", n, minimum=1))


def algbw_bytes_per_s(size_bytes: float, time_s: float) -> float:
    """Algorithm bandwidth: ``S / t``, in bytes/s.

    Convert it yourself for printing, and mind the unit the tool prints: nccl-tests
    divides by 10^9, the Neuron ``nccom-test`` by 2^30 although its column says "GB/s".

    Examples
    --------
    The nccom-test user guide's first run, 33,554,432 bytes all-reduced by 2 ranks in
    768 µs, printed as "40.69 GB/s" (which is GiB/s):

    >>> from trainium_lab.units import GB, GiB, us
    >>> bw = algbw_bytes_per_s(33_554_432, 768 * us)
    >>> round(bw / GiB, 2), round(bw / GB, 2)
    (40.69, 43.69)
    """
    return positive("size_bytes", size_bytes) / positive("time_s", time_s)


def busbw_bytes_per_s(size_bytes: float, time_s: float, n: int,
                      collective: str = "all_reduce") -> float:
    """Bus bandwidth: algorithm bandwidth × :func:`bus_factor`, in bytes/s.

    Bus bandwidth is what each rank's link actually carried, so it can be
    compared with the link's rated speed whatever ``n`` is.

    References
    ----------
    NVIDIA nccl-tests, ``doc/PERFORMANCE.md`` (definition); AWS Neuron docs, NCCOM-TEST
    user guide (printed runs, in GiB/s).

    Examples
    --------
    The nccom-test guide's 64-rank all-reduce of 1 GiB on two instances in 41,806 µs,
    printed as algbw 23.92 and busbw 47.09 "GB/s" (GiB/s):

    >>> from trainium_lab.units import GiB, us
    >>> round(busbw_bytes_per_s(GiB, 41806 * us, 64) / GiB, 2)
    47.09
    """
    return algbw_bytes_per_s(size_bytes, time_s) * bus_factor(collective, n)


def nccom_test_cases() -> pd.DataFrame:
    """The nccom-test runs printed in AWS's user guide, with the bandwidths recomputed.

    Reads ``data/nccom_test_cases.csv`` (size, ranks, time and the printed columns) and
    adds ``algbw_bytes_per_s`` and ``busbw_bytes_per_s`` from :func:`algbw_bytes_per_s` and
    :func:`busbw_bytes_per_s`, plus both read in GiB/s and in GB/s, so the printed "GB/s"
    can be matched against each reading.

    Returns
    -------
    pandas.DataFrame
        The CSV's columns (``case_id, collective, n_ranks, n_instances, size_bytes, dtype,
        time_us, printed_algbw, printed_busbw, printed_unit, source, ...``) plus
        ``algbw_bytes_per_s, busbw_bytes_per_s, algbw_gib_per_s, algbw_gb_per_s,
        busbw_gib_per_s, busbw_gb_per_s``.

    References
    ----------
    AWS Neuron docs, "NCCOM-TEST" (``tools/neuron-sys-tools/nccom-test.rst``).

    Examples
    --------
    >>> t = nccom_test_cases().set_index("case_id")
    >>> t.loc["allr-2r-32mib", ["printed_algbw", "algbw_gib_per_s", "algbw_gb_per_s"]].round(2).tolist()
    [40.69, 40.69, 43.69]
    """
    df = specs.read_data_csv("nccom_test_cases.csv")
    t = df.time_us.astype(float) * us
    size = df.size_bytes.astype(float)
    df["algbw_bytes_per_s"] = [algbw_bytes_per_s(sz, tt) for sz, tt in zip(size, t)]
    df["busbw_bytes_per_s"] = [busbw_bytes_per_s(sz, tt, int(n), coll) for sz, tt, n, coll
                               in zip(size, t, df.n_ranks, df.collective)]
    df["algbw_gib_per_s"] = df.algbw_bytes_per_s / GiB
    df["algbw_gb_per_s"] = df.algbw_bytes_per_s / GB
    df["busbw_gib_per_s"] = df.busbw_bytes_per_s / GiB
    df["busbw_gb_per_s"] = df.busbw_bytes_per_s / GB
    return df


def latency_crossover_bytes(n: int, bandwidth_bytes_per_s: float, latency_s: float) -> float:
    """Message size at which a ring collective's latency and bandwidth terms are equal.

    For all-reduce, 2(n−1)α = 2(n−1)/n · S/B gives ``S* = n·α·B`` (the same for
    reduce-scatter and all-gather). Below ``S*`` the time is mostly latency and
    stops shrinking in proportion to the size.

    Examples
    --------
    >>> latency_crossover_bytes(16, 25e9, 15e-6)
    6000000.0
    """
    n = integer("n", n, minimum=2)
    return n * positive("latency_s", latency_s) * positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)


def size_sweep(sizes_bytes: Sequence[float], n: int, bandwidth_bytes_per_s: float,
               latency_s: float = 0.0, collective: str = "all_reduce") -> pd.DataFrame:
    """Time of one collective over a range of sizes, with and without the latency term.

    Returns
    -------
    pandas.DataFrame
        ``size_bytes, time_s, bandwidth_only_s, latency_share, effective_bytes_per_s``
        (``S / time``, the algorithm bandwidth this model predicts).

    Examples
    --------
    >>> df = size_sweep([1e3, 1e9], 16, 25e9, 15e-6)
    >>> df["latency_share"].round(3).tolist()
    [1.0, 0.006]
    """
    collective = choice("collective", collective, COLLECTIVES)
    sizes = sequence("sizes_bytes", sizes_bytes, positive)
    f = COLLECTIVES[collective]
    t = np.array([f(s, n, bandwidth_bytes_per_s, latency_s) for s in sizes])
    t0 = np.array([f(s, n, bandwidth_bytes_per_s, 0.0) for s in sizes])
    sizes_arr = np.array(sizes)
    share = np.divide(t - t0, t, out=np.zeros_like(t), where=t > 0)
    eff = np.divide(sizes_arr, t, out=np.full_like(t, np.inf), where=t > 0)
    return pd.DataFrame({"size_bytes": sizes_arr, "time_s": t, "bandwidth_only_s": t0,
                         "latency_share": share, "effective_bytes_per_s": eff})


# --------------------------------------------------------------------- the ring, step by step


def ring_allreduce_steps(n: int, step: int) -> pd.DataFrame:
    """State of a ring all-reduce over ``n`` participants after ``step`` steps.

    Participant ``r`` sends to ``(r+1) % n``. In reduce-scatter step ``k``
    (``k = 0 … n−2``) participant ``r`` sends its partial sum of chunk
    ``(r − k) % n``; in all-gather step ``k`` it forwards the finished chunk
    ``(r + 1 − k) % n``.

    Parameters
    ----------
    n : int
        Participants, 2 to 16.
    step : int
        Steps done so far, ``0 … 2(n−1)``.

    Returns
    -------
    pandas.DataFrame
        One row per (participant, chunk): ``rank, chunk, contributions`` (how many
        participants' data the held copy of the chunk includes; ``n`` means fully
        reduced), ``sending`` (the chunk is what this rank sends in the *next*
        step), ``phase`` of the next step and ``sent_fraction`` (share of the
        buffer each participant has sent so far, ``step / n``).

    Examples
    --------
    >>> df = ring_allreduce_steps(4, 6)
    >>> bool((df["contributions"] == 4).all()), float(df["sent_fraction"].iloc[0])
    (True, 1.5)
    """
    n = integer("n", n, minimum=2, maximum=16)
    step = integer("step", step, minimum=0, maximum=2 * (n - 1))
    held = np.ones((n, n), dtype=int)  # held[rank, chunk]: contributions included
    for k in range(step):
        send = held.copy()
        for r in range(n):
            dst = (r + 1) % n
            if k < n - 1:
                c = (r - k) % n
                held[dst, c] = send[dst, c] + send[r, c]
            else:
                c = (r + 1 - (k - (n - 1))) % n
                held[dst, c] = send[r, c]
    if step < n - 1:
        phase, chunk_of = "reduce-scatter", lambda r: (r - step) % n
    elif step < 2 * (n - 1):
        phase, chunk_of = "all-gather", lambda r: (r + 1 - (step - (n - 1))) % n
    else:
        phase, chunk_of = "done", lambda r: -1
    rows = [dict(rank=r, chunk=c, contributions=int(held[r, c]), sending=c == chunk_of(r),
                 phase=phase, sent_fraction=step / n) for r in range(n) for c in range(n)]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- placed groups


def _placement(placement):
    from trainium_lab.topology import Placement  # topology does not import this module

    return instance("placement", placement, Placement, "a Placement from topology.place(...)")


def group_collective_s(placement, kind: str, size_bytes: float, collective: str = "all_reduce",
                       latency_s: float | None = None) -> float:
    """Seconds for one collective in each group of ``kind`` of a placed job.

    The group's chips form a ring at the speed of the slowest level the group
    crosses (``placement.level(kind)``), using that level's per-chip bandwidth as
    the source gives it (scope and direction in ``placement.summary()``). When
    ``k`` ranks of one chip belong to ``k`` different groups of this kind, those
    groups run at once and share the chip's links, so each gets ``B/k``. Traffic
    between logical cores of one chip is not modelled: a group inside one chip
    costs 0. On a switched level an all-to-all uses :func:`direct_all_to_all_s`.

    Parameters
    ----------
    placement : trainium_lab.topology.Placement
        From :func:`trainium_lab.topology.place`.
    kind : {"tp", "pp", "dp", "ep"}
        Which groups.
    size_bytes : float
        Bytes per rank (>= 0).
    collective : str
        A key of ``COLLECTIVES``.
    latency_s : float, optional
        Per-step latency; by default the level's published latency, else 0.

    Returns
    -------
    float
        Seconds (the slowest group's time).

    Examples
    --------
    >>> from trainium_lab.topology import place
    >>> p = place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    >>> round(group_collective_s(p, "tp", 2 * 4096 * 16384) * 1e3, 3)   # 16 chips at 1,024 GB/s
    0.246
    >>> round(group_collective_s(p, "dp", 2 * 405e9 / 64 / 4, latency_s=0.0), 3)  # per rank, 4 ranks a chip
    0.506
    """
    collective = choice("collective", collective, COLLECTIVES)
    size = positive("size_bytes", size_bytes, allow_zero=True)
    level, n_chips, sharing = _placement(placement).slowest(kind)
    return _level_cost(level, n_chips, sharing, size, collective, latency_s)


def _level_cost(level, n_chips: int, sharing: int, size: float, collective: str,
                latency_s: float | None) -> float:
    """The arithmetic of :func:`group_collective_s` once the level and the group are known."""
    if level.bytes_per_s is None or n_chips == 1:
        return 0.0
    alpha = (level.latency_s or 0.0) if latency_s is None else positive("latency_s", latency_s, allow_zero=True)
    if collective == "all_to_all" and level.switched:
        collective = "all_to_all_direct"
    return COLLECTIVES[collective](size * sharing, n_chips, level.bytes_per_s, alpha)


def level_collective_s(size_bytes: float, n_chips: int, level="instance", system: str = "trn2-ultraserver",
                       collective: str = "all_reduce", *, sharing: int = 1, lnc: int | None = None,
                       latency_s: float | None = None) -> float:
    """Seconds for one collective over ``n_chips`` chips at one level of a system.

    The arithmetic of :func:`group_collective_s` without a placement: a ring (or,
    for an all-to-all on a switched level, a direct exchange) over ``n_chips`` chips
    at the level's per-chip bandwidth, each chip sending ``size_bytes × sharing``
    (``sharing`` groups share the chip's links). The layout planner and
    :mod:`trainium_lab.moe` use it for groups whose level they already know.

    Parameters
    ----------
    size_bytes : float
        Bytes per participant (>= 0).
    n_chips : int
        Chips in the group (>= 1; 1 costs nothing: traffic inside a chip is not modelled).
    level : str or trainium_lab.topology.Level
        ``"instance"``, ``"ultraserver"`` or ``"efa"`` (a level of ``system``), or a ``Level``.
    system : str
        The system whose level it is (ignored when ``level`` is a ``Level``).
    collective : str
        A key of ``COLLECTIVES``.
    sharing : int
        Groups sharing each chip's links (>= 1).
    lnc : int, optional
        Logical NeuronCore setting, only to build the system's cluster.
    latency_s : float, optional
        Per-step latency; by default the level's published latency, else 0.

    Examples
    --------
    >>> act = 2 * 4096 * 16384
    >>> round(level_collective_s(act, 16, "instance") * 1e3, 3)   # as group_collective_s for TP over 16 chips
    0.246
    >>> switch = level_collective_s(1e9, 4, "instance", "trn3-gen1-ultraserver", "all_to_all", lnc=2)
    >>> switch < level_collective_s(1e9, 4, "instance", "trn2-ultraserver", "all_to_all")  # vs torus ring
    True
    """
    from trainium_lab.topology import Level, cluster

    collective = choice("collective", collective, COLLECTIVES)
    size = positive("size_bytes", size_bytes, allow_zero=True)
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=10**7)
    sharing = integer("sharing", sharing, minimum=1, maximum=10**4)
    if not isinstance(level, Level):
        if not isinstance(level, str):
            raise ValueError(f"level must be a level name or a topology.Level, got {level!r}")
        level = cluster(system, 1, lnc).level(level)
    return _level_cost(level, n_chips, sharing, size, collective, latency_s)


def placement_costs(placement, size_bytes: float | dict[str, float],
                    collective: str | dict[str, str] = "all_reduce",
                    latency_s: float | None = None) -> pd.DataFrame:
    """One row per kind of group: where it runs and what one collective costs there.

    Parameters
    ----------
    placement : trainium_lab.topology.Placement
    size_bytes : float or dict
        Bytes per rank, one figure for every kind or ``{"tp": ..., "dp": ...}``
        (kinds left out are skipped).
    collective : str or dict
        A key of ``COLLECTIVES``, or one per kind.
    latency_s : float, optional
        Per-step latency for every level; default: each level's published latency, else 0.

    Returns
    -------
    pandas.DataFrame
        ``placement.summary()`` columns plus ``collective``, ``size_bytes`` and ``time_s``.

    Examples
    --------
    >>> from trainium_lab.topology import place
    >>> p = place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    >>> costs = placement_costs(p, {"tp": 2**20, "dp": 2**30})
    >>> costs["kind"].tolist(), costs["level"].tolist(), (costs["time_s"] * 1e3).round(3).tolist()
    (['tp', 'dp'], ['instance', 'efa'], [0.002, 171.829])
    """
    summary = _placement(placement).summary()
    rows = []
    for row in summary.to_dict("records"):
        kind = row["kind"]
        size = size_bytes.get(kind) if isinstance(size_bytes, dict) else size_bytes
        coll = collective.get(kind, "all_reduce") if isinstance(collective, dict) else collective
        if size is None:
            continue
        t = group_collective_s(placement, kind, size, coll, latency_s)
        rows.append({**row, "collective": coll, "size_bytes": float(size), "time_s": t})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- when DP is communication-bound
# Appended for issue 15 (chapter 03 derives it; chapter 05 uses it).


def dp_comm_bound_tokens_per_chip(flop_per_s: float, bandwidth_bytes_per_s: float,
                                  n: int | None = None, *, grad_bytes_per_param: float = 2.0,
                                  flops_per_token_per_param: float = 4.0) -> float:
    """Tokens per chip per step below which data parallelism is communication-bound.

    A chip that processes ``B`` tokens per step spends ``k·N·B / C`` seconds in the part
    of the step the gradient all-reduce can overlap (the backward pass, ``k = 4``: two
    matmuls of ``2·N`` FLOPs per token each), and its ring all-reduce of ``g·N``
    gradient bytes takes ``2(n−1)/n · g·N / W`` (:func:`ring_allreduce_s`). The
    all-reduce hides behind the backward pass when the first is at least the second::

        B* = 2(n−1)/n · g / k · C / W          (tokens per chip)

    ``N`` cancels. With BF16 gradients (``g = 2``), backward-pass overlap (``k = 4``)
    and large ``n``, ``B* = C / W``: chip FLOP/s over the per-chip bandwidth of the
    level the all-reduce crosses. With model parallelism inside each replica, each chip
    holds ``N/m`` parameters but sees the replica's tokens, so ``B`` counts the tokens
    of one model replica.

    Parameters
    ----------
    flop_per_s : float
        The chip's matmul rate ``C`` (peak, or peak × MFU for an achieved rate).
    bandwidth_bytes_per_s : float
        Per-chip bandwidth ``W`` of the slowest level the data-parallel group crosses.
    n : int, optional
        Data-parallel group size; ``None`` takes the large-``n`` limit, ``2(n−1)/n → 2``.
    grad_bytes_per_param : float
        Bytes per gradient value sent (2 for BF16, 4 for FP32).
    flops_per_token_per_param : float
        FLOPs per parameter per token of the compute the all-reduce overlaps: 4 for the
        backward pass, 6 if it could overlap the whole step.

    Returns
    -------
    float
        Tokens per chip per step (per replica with model parallelism).

    References
    ----------
    J. Austin et al., "How to Scale Your Model" (2025), part 5, data parallelism:
    communication-bound below ``B/X = C/W``; J. Kaplan et al., arXiv:2001.08361 (2020),
    §2.1 (6 FLOPs per parameter per token, 4 of them in the backward pass); Thakur,
    Rabenseifner and Gropp (2005) (ring all-reduce).

    Examples
    --------
    Trainium2 at its BF16 rate (667 TFLOP/s) inside one instance (1,024 GB/s per chip):

    >>> round(dp_comm_bound_tokens_per_chip(667e12, 1024e9))
    651
    >>> round(dp_comm_bound_tokens_per_chip(667e12, 1024e9, n=16))   # × 15/16
    611
    >>> round(dp_comm_bound_tokens_per_chip(667e12, 1024e9, grad_bytes_per_param=4))
    1303
    """
    c = positive("flop_per_s", flop_per_s)
    w = positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    factor = 2.0 if n is None else 2 * (integer("n", n, minimum=1) - 1) / n
    g = in_range("grad_bytes_per_param", grad_bytes_per_param, 0.0, 64.0, low_open=True)
    k = in_range("flops_per_token_per_param", flops_per_token_per_param, 0.0, 100.0, low_open=True)
    return factor * g / k * c / w


def dp_comm_bound_table(systems: Sequence[str] = ("trn2-ultraserver", "trn3-gen1-ultraserver"),
                        dtype: str = "bfloat16", n: int | None = None, *,
                        grad_bytes_per_param: float = 2.0,
                        flops_per_token_per_param: float = 4.0) -> pd.DataFrame:
    """:func:`dp_comm_bound_tokens_per_chip` for every level of each system, from ``specs``.

    Parameters
    ----------
    systems : sequence of str
        Systems :func:`trainium_lab.topology.levels_table` knows.
    dtype : str
        The matmul dtype whose dense rate is ``C`` (``"bf16"``, ``"fp8"``, ``"mxfp8"`` …);
        every system's chip must have it.
    n, grad_bytes_per_param, flops_per_token_per_param
        As in :func:`dp_comm_bound_tokens_per_chip`.

    Returns
    -------
    pandas.DataFrame
        One row per (system, level): ``system``, ``chip``, ``level``, ``dtype``,
        ``flop_per_s``, ``bytes_per_s`` (per chip, as ``levels_table`` gives it),
        ``scope``, ``direction``, ``tokens_per_chip``.

    Examples
    --------
    >>> t = dp_comm_bound_table(["trn2-ultraserver"])
    >>> t[["level", "tokens_per_chip"]].round(0).values.tolist()
    [['instance', 651.0], ['ultraserver', 2605.0], ['efa', 26680.0]]
    """
    from trainium_lab.topology import levels_table  # topology does not import this module

    levels = levels_table(systems)
    rows = []
    for r in levels.itertuples(index=False):
        chip = specs.system(r.system).chip
        if not isinstance(dtype, str):
            raise ValueError(f"dtype must be a dtype name such as 'bf16', got {dtype!r}")
        c = chip.dense_flops_per_s[dtype]
        rows.append({"system": r.system, "chip": chip.key, "level": r.level,
                     "dtype": chip.dense_flops_per_s.key(dtype), "flop_per_s": c,
                     "bytes_per_s": r.bytes_per_s, "scope": r.scope, "direction": r.direction,
                     "tokens_per_chip": dp_comm_bound_tokens_per_chip(
                         c, r.bytes_per_s, n, grad_bytes_per_param=grad_bytes_per_param,
                         flops_per_token_per_param=flops_per_token_per_param)})
    return pd.DataFrame(rows)


__all__ += ["dp_comm_bound_tokens_per_chip", "dp_comm_bound_table"]


# --------------------------------------------------------------------- small groups in the torus
# Chapter 03 audit: the per-device NeuronLink figure is what a chip has towards all four of its
# torus neighbours; a group of fewer chips reaches its own members over fewer of those links.


def torus_group_links(n_chips: int, grid_side: int) -> int:
    """Torus links a chip has to other members of its group, for the worst-placed chip.

    The group is chips ``0 … n_chips−1`` of a ``grid_side × grid_side`` 2D torus numbered
    row-major, as :func:`trainium_lab.topology.place` packs consecutive ranks (chip ``c`` at
    row ``c // grid_side``, column ``c % grid_side``; AWS does not publish the device
    numbering, so this layout is the course's assumption). Each chip links to its left,
    right, upper and lower neighbours with wrap-around; a neighbour that appears twice (a
    side of 2) counts once. On a 4 × 4 torus a group of 2, 4, 8 or 16 chips reaches its
    members over 1, 2, 3 or 4 links per chip.

    Parameters
    ----------
    n_chips : int
        Chips in the group, 1 to ``grid_side**2``.
    grid_side : int
        Chips along one side of the torus (>= 1).

    Returns
    -------
    int
        The fewest links any member has to other members (0 for one chip).

    References
    ----------
    AWS Neuron docs, "Collective communication: System Connectivity" (each Trn2 chip is
    connected to 4 neighbours in a 2D torus) and "Intra-node Collective Communications"
    (rings run on mutually exclusive wires; 2 non-overlapping Hamiltonian cycles when all
    16 devices take part).

    Examples
    --------
    >>> [torus_group_links(n, 4) for n in (1, 2, 4, 8, 16)]
    [0, 1, 2, 3, 4]
    """
    side = integer("grid_side", grid_side, minimum=1, maximum=1024)
    n = integer("n_chips", n_chips, minimum=1, maximum=side * side)
    fewest = None
    for c in range(n):
        r, col = divmod(c, side)
        neighbours = {((r + dr) % side) * side + (col + dc) % side
                      for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0))} - {c}
        links = sum(1 for m in neighbours if m < n)
        fewest = links if fewest is None else min(fewest, links)
    return fewest


def _square_torus(c) -> bool:
    """Whether a cluster's instance level is a square 2D torus (Trn1, Trn2; not Trn3's switch)."""
    return not c.level("instance").switched and c.grid_side * c.grid_side == c.chips_per_instance


def torus_group_bytes_per_s(n_chips: int, system: str = "trn2-ultraserver") -> float:
    """Per-chip bandwidth of a group of ``n_chips`` inside one instance's torus, counting
    only the links that join the group's own chips.

    AWS gives the torus bandwidth per device (1,024 GB/s on Trn2), with no per-link figure
    and no direction. The course's cost model (:func:`group_collective_s`) charges every
    group inside an instance that whole figure, which a 16-chip group can use (the runtime
    runs rings on disjoint links). A smaller group has fewer links between its own members
    (:func:`torus_group_links`); if the chip's torus links are equal (an **assumption**: AWS
    does not say), it gets that share of the figure. Routing through other chips could add
    more, but their links carry their own groups' traffic when all groups run at once.

    Parameters
    ----------
    n_chips : int
        Chips in the group, 1 to the chips of one instance.
    system : str
        A system whose instance level is a 2D torus (``"trn2.48xlarge"``,
        ``"trn2-ultraserver"``, ``"trn1.32xlarge"``).

    Returns
    -------
    float
        bytes/s per chip (0 for one chip: traffic inside a chip is not modelled).

    Examples
    --------
    >>> [torus_group_bytes_per_s(n) / 1e9 for n in (2, 4, 8, 16)]   # of Trn2's 1,024 GB/s
    [256.0, 512.0, 768.0, 1024.0]
    """
    from trainium_lab.topology import cluster  # topology does not import this module

    if not isinstance(system, str):
        raise ValueError(f"system must be a system name such as 'trn2-ultraserver', got {system!r}")
    c = cluster(system, 1, lnc=1)  # bandwidth does not depend on LNC; 1 is valid on every chip
    level = c.level("instance")
    if not _square_torus(c):
        raise ValueError(f"system must have a square 2D torus inside each instance; "
                         f"{c.system} does not")
    n = integer("n_chips", n_chips, minimum=1, maximum=c.chips_per_instance)
    return level.bytes_per_s * torus_group_links(n, c.grid_side) / torus_group_links(
        c.chips_per_instance, c.grid_side)


__all__ += ["torus_group_links", "torus_group_bytes_per_s"]


def torus_average_hops(n_chips: int, grid_side: int) -> float:
    """Mean number of torus links a message crosses between two members of a group.

    The group is chips ``0 … n_chips−1`` of a ``grid_side × grid_side`` 2D torus numbered
    row-major (as :func:`torus_group_links`); a message takes a shortest path over links
    that join members of the group (breadth-first search), and the mean is over every
    ordered pair of distinct members. For the whole torus it is the closed form
    ``2 · side · Σ_d ring(d) / (side² − 1)`` with ``ring(d) = min(d, side − d)``: on a
    4 × 4 torus each dimension contributes 0 + 1 + 2 + 1 = 4 per row, so the 15 peers of a
    chip are 2·4·4/15 = 32/15 hops away on average.

    An all-to-all where each of ``n`` members holds ``S`` bytes, ``S/n`` for each peer, puts
    ``(n−1)/n · h̄ · S`` bytes on each chip's links (``h̄`` this function); spread evenly over
    the group's links of total bandwidth ``B`` per chip (exact for the whole torus by
    symmetry, an assumption for a smaller group), it takes ``(n−1)/n · h̄ · S/B``: ``2 · S/B``
    on 16 chips, against ``(n−1)/2 · S/B = 7.5 · S/B`` for a one-way ring
    (:func:`ring_all_to_all_s`).

    Parameters
    ----------
    n_chips : int
        Chips in the group, 1 to ``grid_side**2``.
    grid_side : int
        Chips along one side of the torus, 1 to 16 (Trainium instances have 4).

    Returns
    -------
    float
        Mean hops (0 for one chip).

    References
    ----------
    W. J. Dally, B. Towles, *Principles and Practices of Interconnection Networks*, 2004,
    §3.2 (average hop count of a k-ary n-cube: n·k/4 for even k, here taken over distinct
    pairs) and §3.3.1 (channel load of uniform traffic). AWS Neuron docs, "Collective
    communication: System Connectivity" (Trn2: 4 × 4 2D torus inside an instance).

    Examples
    --------
    >>> torus_average_hops(16, 4) == 32 / 15
    True
    >>> [round(torus_average_hops(n, 4), 4) for n in (1, 2, 4, 8)]
    [0.0, 1.0, 1.3333, 1.7143]
    """
    side = integer("grid_side", grid_side, minimum=1, maximum=16)
    n = integer("n_chips", n_chips, minimum=1, maximum=side * side)
    if n == 1:
        return 0.0
    total = 0
    for start in range(n):
        dist = {start: 0}
        frontier = [start]
        while frontier:
            nxt = []
            for c in frontier:
                r, col = divmod(c, side)
                for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                    m = ((r + dr) % side) * side + (col + dc) % side
                    if m < n and m not in dist:
                        dist[m] = dist[c] + 1
                        nxt.append(m)
            frontier = nxt
        total += sum(dist.values())
    return total / (n * (n - 1))


__all__ += ["torus_average_hops"]


def torus_2d_allreduce_s(size_bytes: float, x: int, y: int, link_bytes_per_s: float,
                         latency_s: float = 0.0) -> float:
    """All-reduce of ``size_bytes`` on an ``x × y`` 2D torus with bidirectional rings on both axes.

    Each chip has four links (±x, ±y), each carrying ``link_bytes_per_s`` in each direction.
    The buffer is split in halves: one half is reduce-scattered along x and then along y, the
    other along y and then x, so in every phase both axes are busy; a bidirectional ring of
    ``n`` chips reduce-scatters ``s`` bytes in ``(n−1)/n · s / (2·b)`` (half of the data each
    way). The all-gathers retrace the steps. With ``phase_1 = max(RS_x(S/2), RS_y(S/2))`` and
    ``phase_2 = max(RS_y(S/(2x)), RS_x(S/(2y)))``:

    ``t = 2 · (phase_1 + phase_2) + 2 · ((x−1) + (y−1)) · latency_s``.

    Each chip sends ``2 (N−1)/N · S`` bytes in all (``N = x·y``), the all-reduce's minimum, over
    its four links at once: on a square torus the time equals one ring at the chip's four-link
    aggregate, ``2 (N−1)/N · S / (4b)``, with ``2(x−1) + 2(y−1)`` latency steps instead of
    ``2(N−1)`` (12 instead of 30 on 4 × 4).

    References
    ----------
    Austin et al., "How to Scale Your Model" (2025), part 3 (collectives on a multi-axis torus:
    bidirectional links, one ring per axis, bytes ÷ (W · axes)); Patarasuk & Yuan 2009 (ring
    all-reduce bandwidth optimality).

    Examples
    --------
    >>> b = 1e11
    >>> t = torus_2d_allreduce_s(1e9, 4, 4, b)
    >>> abs(t - ring_allreduce_s(1e9, 16, 4 * b)) < 1e-15   # square torus: the four-link aggregate
    True
    >>> torus_2d_allreduce_s(1e9, 4, 1, b) == ring_allreduce_s(1e9, 4, 2 * b)   # one axis: both directions
    True
    """
    size = positive("size_bytes", size_bytes, allow_zero=True)
    x = integer("x", x, minimum=1, maximum=10**6)
    y = integer("y", y, minimum=1, maximum=10**6)
    b = positive("link_bytes_per_s", link_bytes_per_s)
    lat = positive("latency_s", latency_s, allow_zero=True)

    def rs(n: int, s: float) -> float:
        return (n - 1) / n * s / (2.0 * b)

    phase1 = max(rs(x, size / 2), rs(y, size / 2))
    phase2 = max(rs(y, size / (2 * x)), rs(x, size / (2 * y)))
    return 2.0 * (phase1 + phase2) + 2.0 * ((x - 1) + (y - 1)) * lat


__all__ += ["torus_2d_allreduce_s"]


# --------------------------------------------------------------------- the Neuron runtime's algorithms

#: Sizes at which the Neuron runtime switches algorithm inside one Trainium2/3 node (AWS,
#: "Intra-node Collective Communications", Algorithm Summary, sweet ranges found empirically:
#: Mesh < 1 MB, RDH 1-56 MB, KangaRing > 56 MB). "MB" read as 10^6 bytes (the page does not say).
MESH_MAX_BYTES = 1e6
RDH_MAX_BYTES = 56e6
def flat_ring_min_bytes() -> float:
    """Where the runtime's "large message" begins for the flat ring across systems without routed
    NeuronLink (``flat_ring_min_bytes`` in ``data/calibration.csv``, sourced, not fitted).

    AWS ("Inter-node Collective Communications"): "We only enable Flat Ring on Trn1 for large
    message size cases where it has a clear edge"; the only size class AWS names for these
    collectives is Neuron 2.17's "small collective communication operators (smaller than 16MB)".
    The NeuronLink generation, not the chip's name, selects the flat ring.

    Examples
    --------
    >>> flat_ring_min_bytes()
    16000000.0
    """
    return specs.calibration("flat_ring_min_bytes").value


#: ``algorithm=`` choices of :func:`neuron_collective`: "auto" picks as the runtime does.
NEURON_ALGORITHMS = ("auto", "hierarchical", "flat_ring")
#: who launches the collective: inside a compiled graph (a NEFF: training and serving steps), or
#: the NCCOM-TEST benchmark tool from the host (its rows in data/measurements.csv)
LAUNCHED_BY = ("graph", "nccom-test")
#: the parameters the model reads (data/calibration.csv): sourced hop latencies, one fixed cost per
#: collective inside a NEFF (every chip), and the benchmark tool's own launch and byte rate
NEURON_PARAMETERS = ("collective_fixed_s", "hop_latency_s", "efa_hop_latency_s", "nccom_launch_s",
                     "nccom_dma_efficiency")
#: NeuronLink generations whose chips route a write to any rank of a remote chip, which is what
#: Mesh and RDH need (AWS, "Intra-node Collective Communications": Mesh "is made possible by
#: inter-chip routing", described for Trainium2's NeuronLink-v3); other chips run a Ring
ROUTED_NEURONLINK = ("NeuronLink-v3", "NeuronLink-v4")


@dataclass(frozen=True)
class CollectiveCost:
    """One collective on Neuron hardware: a bound, an expectation and the algorithm (seconds).

    ``expected_s = latency_s + per_byte_s · size``: the fixed cost and the steps' hop latencies,
    then the bytes at the published rates. ``bound_s`` is a lower bound on the time (published
    rates, the smallest published per-hop latency, the cheapest algorithm).
    """

    op: str
    algorithm: str
    size_bytes: float
    bound_s: float
    expected_s: float
    latency_s: float
    per_byte_s: float

    def _repr_markdown_(self) -> str:
        from trainium_lab.units import format_seconds

        return (f"**{self.op}** of {self.size_bytes:,.0f} B ({self.algorithm}): bound "
                f"{format_seconds(self.bound_s)}, expected {format_seconds(self.expected_s)} "
                f"(latency {format_seconds(self.latency_s)})")


def _intra_algorithm(chip, size: float, r: int, launched_by: str = "graph") -> tuple[str, float]:
    """The intra-node algorithm and its all-reduce hops (AWS, "Intra-node Collective Communications").

    Inside a compiled graph, on every chip, the runtime's documented choice by size for more than
    two ranks: Mesh below 1 MB, RDH to 56 MB (``2·log2 r`` steps), KangaRing above (half the
    per-hop latency of a ring: ``r`` steps for an all-reduce); AWS calls Ring "Fallback only".
    The same on Trainium1 and Inferentia2 as on Trainium2/3: Trainium1's NeuronLink-v2 torus
    makes every chip's memory "directly addressable from each of the chips" (what Mesh's direct
    remote writes need), and AWS's Trn3 page describes Trn1 and Trn2 NeuronLink alike. The
    NCCOM-TEST guide's Trainium1 runs (``launched_by="nccom-test"``) are modelled as the Ring
    their own numbers show on NeuronLink-v2: at 1 KiB a 32-rank all-gather takes about 90 µs more
    than a 2-rank all-reduce, about 3 µs for each rank added, which a 1-step Mesh cannot explain (the
    guide's later runs, on a newer runtime, finish 32-rank collectives in 6 to 24 µs).

    Mesh is O(1) in steps: 2 for an all-reduce at any group size (the hops do not grow with the
    chips). Counting one hop per remote chip a rank writes to (``2·n_chips``) was tried and
    rejected: AWS's runtime picks Mesh over RDH (``2·log2 r`` steps) below 1 MB, so a Mesh
    all-reduce cannot cost more hops than RDH's, and an 8B TP-8 decode on two Trainium2 chips then
    came out about twice too fast (tests/test_reality.py).
    """
    if r <= 1:
        return "none", 0.0
    if r > 2 and (launched_by == "graph" or chip.neuronlink_version in ROUTED_NEURONLINK):
        if size < MESH_MAX_BYTES:
            return "mesh", 2.0
        if size < RDH_MAX_BYTES:
            return "rdh", 2.0 * math.ceil(math.log2(r))
        return "kangaring", float(r)
    return "ring", float(2 * (r - 1))


def _op_steps(op: str, alg: str, r: int, allreduce_steps: float) -> float:
    if r <= 1:
        return 0.0
    if op == "all_reduce":
        return allreduce_steps
    return float(r - 1) if alg == "ring" else allreduce_steps / 2.0


def _largest_published(chip, field_name: str) -> float:
    """The larger of the chip's used figure and any alternative AWS gives (a bound takes the larger)."""
    used = getattr(chip, field_name)
    alts = [f.base_value for f in specs.alternatives(chip.key, field_name)]
    return max([used] + [v for v in alts if isinstance(v, float)])


def _neuron_terms(op: str, size: float, n_ranks: int, system, n_systems: int, sharing: int = 1,
                  lnc: int | None = None, chips_per_system: int | None = None,
                  launched_by: str = "graph") -> list[dict]:
    """Each candidate algorithm's terms: time = Σ parameter × term (linear once the algorithm is fixed).

    ``launch`` counts the fixed cost, ``steps`` NeuronLink hops (α), ``efa_steps`` EFA hops
    (α_EFA), ``flat_steps`` hops bounded by their slowest (``max(α, α_EFA)``); ``chip_s``,
    ``link_s``, ``efa_s`` are the bytes at the published rate of each level (``*_bound_s`` at the
    larger published figure where AWS gives two); ``dma_s`` is each rank's bus bytes at its share
    of the chip's HBM rate; ``overlap`` says the levels run at once (a flat ring) rather than one
    after the other (hierarchical stages).
    """
    from trainium_lab import cores

    c = system.chip
    lnc = lnc if lnc is not None else (cores.any_lnc(c) or 1)
    per_chip = cores.logical_cores_per_chip(c, lnc)
    hbm_rank = c.hbm_bytes_per_s / per_chip
    hbm_gain = _largest_published(c, "hbm_bytes_per_s") / c.hbm_bytes_per_s
    link_gain = _largest_published(c, "neuronlink_bytes_per_s") / c.neuronlink_bytes_per_s
    k = n_systems
    r = n_ranks // k                                   # ranks per system
    alg, ar_steps = _intra_algorithm(c, size, r, launched_by)
    steps = _op_steps(op, alg, r, ar_steps)
    fr = bus_factor(op, r)
    if r <= 1:
        chip_s = link_s = 0.0
    elif r <= per_chip:                                # the ranks of one chip: through its HBM
        chip_s, link_s = fr * size * sharing / c.hbm_bytes_per_s, 0.0
    else:
        chip_s, link_s = 0.0, fr * size * sharing / c.neuronlink_bytes_per_s
    dma_s = fr * size / hbm_rank
    if k == 1:
        return [{"algorithm": alg, "launch": 1.0, "steps": steps, "efa_steps": 0.0, "flat_steps": 0.0,
                 "chip_s": chip_s, "link_s": link_s, "efa_s": 0.0, "dma_s": dma_s,
                 "chip_bound_s": chip_s / hbm_gain, "link_bound_s": link_s / link_gain, "overlap": False}]
    # The group's share of its system's EFA: the chips it occupies (packed unless told), less the
    # groups sharing them.
    chips_used = chips_per_system or min(system.n_chips, -(-r // per_chip))
    efa_rate = system.efa_bytes_per_s_total * chips_used / system.n_chips / sharing
    # Hierarchical (AWS, "Inter-node Collective Communications"): intra-node reduce-scatter,
    # inter-node all-reduce on the shards (ring: 2(k-1) steps), intra-node all-gather; an
    # all-gather runs inter-node first, a reduce-scatter intra-node first. The system's EFA
    # carries the whole buffer's bus bytes once: r ranks × f(k)·S/r.
    efa_s = bus_factor(op, k) * size / efa_rate
    hier = {"algorithm": f"hierarchical ({alg} in each system, ring across)", "launch": 1.0,
            "steps": steps, "efa_steps": float(2 * (k - 1) if op == "all_reduce" else k - 1),
            "flat_steps": 0.0, "chip_s": chip_s, "link_s": link_s, "efa_s": efa_s,
            "dma_s": dma_s + bus_factor(op, k) * size / max(r, 1) / hbm_rank,
            "chip_bound_s": chip_s / hbm_gain, "link_bound_s": link_s / link_gain, "overlap": False}
    out = [hier]
    if c.neuronlink_version not in ROUTED_NEURONLINK and op != "all_to_all":
        # Flat ring over all ranks (AWS: "We only enable Flat Ring on Trn1 for large message size
        # cases"): 2(N−1) steps for an all-reduce, each bounded by its slowest (EFA-crossing) hop;
        # every link busy at once.
        n = n_ranks
        fn = bus_factor(op, n)
        link = fn * size * sharing / c.neuronlink_bytes_per_s
        out.append({"algorithm": "flat ring", "launch": 1.0, "steps": 0.0, "efa_steps": 0.0,
                    "flat_steps": float(2 * (n - 1) if op == "all_reduce" else n - 1),
                    "chip_s": 0.0, "link_s": link, "efa_s": fn * size / efa_rate, "dma_s": fn * size / hbm_rank,
                    "chip_bound_s": 0.0, "link_bound_s": link / link_gain, "overlap": True,
                    "runtime_pick": size >= flat_ring_min_bytes()})
    return out


def _neuron_bytes_s(t: dict, p: dict) -> float:
    parts = (t["chip_s"], t["link_s"], t["efa_s"])
    published = max(parts) if t["overlap"] else sum(parts)
    eta = p.get("dma_efficiency")
    return published if eta is None else max(published, t["dma_s"] / eta)


def _neuron_latency_s(t: dict, p: dict) -> float:
    return (p["fixed_s"] * t["launch"] + p["hop_s"] * t["steps"] + p["efa_hop_s"] * t["efa_steps"]
            + max(p["hop_s"], p["efa_hop_s"]) * t["flat_steps"])


def _neuron_expected(t: dict, p: dict) -> float:
    return _neuron_latency_s(t, p) + _neuron_bytes_s(t, p)


def _neuron_bound(t: dict, floor_s: float) -> float:
    floor = floor_s if (t["steps"] or t["efa_steps"] or t["flat_steps"]) else 0.0
    # The levels could overlap (a pipelined algorithm), so the bound is the slowest one.
    return max(t["chip_bound_s"], t["link_bound_s"], t["efa_s"], floor)


def _neuron_params(launched_by: str = "graph", overrides: dict | None = None) -> dict[str, float | None]:
    """The model's parameters for a collective launched inside a graph or by NCCOM-TEST.

    ``overrides`` maps ``data/calibration.csv`` names to trial values (the fit uses it).
    """
    o = overrides or {}

    def v(name):
        return o[name] if name in o else specs.calibration(name).value

    graph = launched_by == "graph"
    return {"fixed_s": v("collective_fixed_s") if graph else v("nccom_launch_s"), "hop_s": v("hop_latency_s"),
            "efa_hop_s": v("efa_hop_latency_s"), "dma_efficiency": None if graph else v("nccom_dma_efficiency")}


def neuron_collective(op: str, size_bytes: float, *, n_ranks: int, system: str, n_systems: int = 1,
                      sharing: int = 1, chips_per_system: int | None = None, lnc: int | None = None,
                      algorithm: str = "auto", launched_by: str = "graph") -> CollectiveCost:
    """One collective as the Neuron runtime runs it: the course's one collective model.

    Inside one system the ranks of one chip exchange through its HBM, a group of several chips
    over NeuronLink, with the intra-node algorithm AWS documents, chosen by size on every chip
    inside a compiled graph (Mesh < 1 MB, RDH to 56 MB, KangaRing above); the NCCOM-TEST guide's
    Trainium1 runs (``launched_by="nccom-test"`` on NeuronLink-v2) ran a Ring (see ``_intra_algorithm``).
    A group that spans systems is **hierarchical** (instance first): reduce-scatter inside each
    system, an all-reduce of the shards across systems over EFA, all-gather inside each system.
    Without routed NeuronLink the runtime may also run a **flat ring** over every rank (2(N−1)
    steps, each bounded by its slowest, EFA-crossing hop); AWS gives no threshold, so ``"auto"``
    takes the faster of the two.

    Expected time, the same on every chip: ``t_fixed + steps·α + efa_steps·α_EFA + bytes/B``.
    ``α`` is AWS's per-hop latency inside a node (1-2 µs; the upper end, under HBM load),
    ``α_EFA`` AWS's ~15 µs EFA hop, ``B`` the published rates. ``t_fixed`` depends on who
    launches the collective: inside a compiled graph (``launched_by="graph"``, training and
    serving) it is ``collective_fixed_s``, one in-NEFF cost fitted on the NxD Inference decode
    steps; the NCCOM-TEST tool (``"nccom-test"``) pays its host launch ``nccom_launch_s`` instead,
    and its bytes move at no more than ``nccom_dma_efficiency`` of each rank's HBM share (both
    fitted on the guide's single-instance runs, used only for the tool's rows). The bound takes
    the published rates (the larger where AWS gives two), one hop of the smallest published
    latency (1 µs) and the cheaper algorithm.

    Parameters
    ----------
    op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    size_bytes : float
        nccom-test's ``size(B)``: the buffer of an all-reduce or reduce-scatter, the gathered
        output of an all-gather (>= 0).
    n_ranks : int
        Ranks in the group (NeuronCores on Trn1 and Inf2, logical cores on Trn2 and Trn3), split
        evenly over ``n_systems``.
    system : str
        A system of ``data/systems.csv`` (``"trn1.32xlarge"``, ``"trn2.48xlarge"``, ...).
    n_systems : int
        Systems the group spans (>= 1).
    sharing : int
        Groups of the same kind running at once on each chip's links and its share of EFA (>= 1;
        the DP groups of a TP-32 layout on Trn1: two, one per NeuronCore of each chip).
    chips_per_system : int, optional
        Chips the group's ranks occupy in each system (its share of the system's EFA); by default
        packed, ``ceil(ranks per system / ranks per chip)``.
    lnc : int, optional
        Logical NeuronCore setting (the chip's default).
    algorithm : {"auto", "hierarchical", "flat_ring"}
        Across systems: the runtime's choice, or one algorithm (``flat_ring``: NeuronLink-v2 only).
    launched_by : {"graph", "nccom-test"}
        Inside a compiled graph (the default) or by the NCCOM-TEST benchmark tool.

    Returns
    -------
    CollectiveCost
        ``bound_s``, ``expected_s`` (= ``latency_s + per_byte_s · size_bytes``) and ``algorithm``.

    References
    ----------
    AWS Neuron docs, "Intra-node Collective Communications with AWS Neuron" and "Inter-node
    Collective Communications with AWS Neuron" (both dated 12/02/2025); "NCCOM-TEST User Guide".
    Thakur, Rabenseifner and Gropp (2005), §4 (ring steps and bytes).

    Examples
    --------
    >>> c = neuron_collective("all_reduce", 2**30, n_ranks=64, system="trn1.32xlarge", n_systems=2)
    >>> c.algorithm, round(c.bound_s * 1e3, 1), c.expected_s > c.bound_s
    ('flat ring', 10.7, True)
    >>> neuron_collective("all_reduce", 1024, n_ranks=0, system="trn1.32xlarge")
    Traceback (most recent call last):
    ...
    ValueError: n_ranks must be an integer in [1, 10,000,000], got 0
    """
    from trainium_lab import cores

    op = choice("op", op, ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"))
    size = positive("size_bytes", size_bytes, allow_zero=True)
    n_ranks = integer("n_ranks", n_ranks, minimum=1, maximum=10**7)
    n_systems = integer("n_systems", n_systems, minimum=1, maximum=10**6)
    sharing = integer("sharing", sharing, minimum=1, maximum=10**4)
    algorithm = choice("algorithm", algorithm, NEURON_ALGORITHMS)
    launched_by = choice("launched_by", launched_by, LAUNCHED_BY)
    if chips_per_system is not None:
        chips_per_system = integer("chips_per_system", chips_per_system, minimum=1, maximum=10**6)
    if not isinstance(system, (str, specs.System)):
        raise ValueError(f"system must be a system name; got {type(system).__name__}")
    s = specs.resolve_system(system)
    lnc_ = cores.resolve_lnc(s.chip, lnc) if lnc is not None else (cores.any_lnc(s.chip) or 1)
    per_system = s.n_chips * cores.logical_cores_per_chip(s.chip, lnc_)
    if n_ranks % n_systems:
        raise ValueError(f"n_ranks must be a multiple of n_systems ({n_systems}); got {n_ranks}")
    if n_ranks // n_systems > per_system:
        raise ValueError(f"n_ranks must be at most {per_system * n_systems} ({per_system} per {s.key}); "
                         f"got {n_ranks}")
    if chips_per_system is not None and chips_per_system > s.n_chips:
        raise ValueError(f"chips_per_system must be at most the {s.n_chips} chips of a {s.key}; got {chips_per_system}")
    cands = _neuron_terms(op, size, n_ranks, s, n_systems, sharing, lnc_, chips_per_system, launched_by)
    if algorithm == "flat_ring":
        if len(cands) < 2:
            raise ValueError(f"algorithm 'flat_ring' runs only on NeuronLink-v2 groups that span systems "
                             f"(not {op} on {s.key} over {n_systems}); use 'auto' or 'hierarchical'")
        cands = cands[1:]
    elif algorithm == "hierarchical":
        cands = cands[:1]
    return _neuron_choose(op, size, cands, _neuron_params(launched_by), specs.calibration("hop_latency_min_s").value)


def _neuron_choose(op: str, size: float, cands: list[dict], p: dict, floor_s: float) -> CollectiveCost:
    # the runtime's documented pick where AWS gives one (the flat ring at large sizes), else the faster
    picked = [t for t in cands if t.get("runtime_pick")] or cands
    best = min(picked, key=lambda t: _neuron_expected(t, p))
    lat, byt = _neuron_latency_s(best, p), _neuron_bytes_s(best, p)
    # bytes terms are linear in the size (at a fixed algorithm), so the slope is byt / size
    per_byte = byt / size if size > 0 else 0.0
    return CollectiveCost(op, best["algorithm"], size, min(_neuron_bound(t, floor_s) for t in cands),
                          lat + byt, lat, per_byte)
