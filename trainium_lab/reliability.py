"""Failure modes at scale: blast radius, job MTBF and how often to checkpoint.

Pure functions in base units (seconds, counts). The failure model throughout is
the classic one for checkpoint/restart: failures arrive as a Poisson process
(independent, exponentially distributed times between failures), every failure
stops the whole synchronous job, the job restarts after ``restart_s`` from its
last completed checkpoint, and a checkpoint is written (blocking, ``checkpoint_s``)
after every ``interval_s`` of useful work.

No failure rate of Trainium hardware is published in the course's sources, so
none is typed in here. Per-unit MTBFs are inputs; :func:`llama3_summary` derives
an illustrative per-accelerator figure from Meta's published Llama 3 interruption
counts (an NVIDIA H100 cluster), to be used only as a GPU-cluster proxy.

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint
   interval", Communications of the ACM 17(9), 530-531, 1974.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
   restart dumps", Future Generation Computer Systems 22(3), 303-312, 2006
   (eq. 37 for the interval; the complete cost model of its section 3).
.. [3] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783,
   2024, section 3.3.4 and Table 5.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import choice, integer, positive
from trainium_lab.units import day, hour, minute

__all__ = [
    "job_mtbf_s", "layout_mtbf_s", "domains_for_chips", "blast_radius",
    "young_interval_s", "daly_interval_s", "optimal_interval_s",
    "checkpoint_cost_s", "expected_segment_s", "lost_fraction", "lost_time_breakdown",
    "lost_time_curve", "interval_markers",
    "MonteCarloResult", "simulate_runs", "simulated_lost_fraction",
    "Llama3Summary", "llama3_interruptions", "llama3_summary", "mtbf_vs_job_size",
    "FAILURE_LEVELS", "STATUSES", "BlastRadius", "FAILURE_MODES", "failure_modes",
]

#: what can fail, from smallest to largest
FAILURE_LEVELS = ("chip", "instance", "ultraserver")
#: status of each chip after a failure, as :func:`blast_radius` labels it
STATUSES = ("failed", "replaced with it", "stalled (healthy, waiting)")


# --------------------------------------------------------------------------- MTBF

def job_mtbf_s(unit_mtbf_s: float, n_units: int) -> float:
    """Mean time between failures of a job that stops when any one of its units fails.

    With ``n`` identical, independent units whose times to failure are
    exponential with mean ``M``, the first failure among them is exponential
    with rate ``n / M``: the job's MTBF is ``M / n``.

    Parameters
    ----------
    unit_mtbf_s : float
        MTBF of one unit (chip, instance, UltraServer), in seconds (> 0).
    n_units : int
        Number of units the job depends on (>= 1).

    Returns
    -------
    float
        Job MTBF in seconds.

    References
    ----------
    The minimum of independent exponential variables; e.g. [2]_ section 2.

    Examples
    --------
    >>> from trainium_lab.units import day, hour
    >>> job_mtbf_s(1000 * day, 1000) / hour
    24.0
    """
    unit_mtbf_s = positive("unit_mtbf_s", unit_mtbf_s)
    n_units = integer("n_units", n_units, minimum=1)
    return unit_mtbf_s / n_units


def domains_for_chips(n_chips: int, system: str = "trn2-ultraserver") -> int:
    """Whole scale-up domains (instances or UltraServers) a job of ``n_chips`` occupies.

    A job holds whole systems: 48 chips on Trn2 UltraServers still occupy (and
    depend on) one 64-chip UltraServer.

    Examples
    --------
    >>> domains_for_chips(48), domains_for_chips(65), domains_for_chips(65, "trn2.48xlarge")
    (1, 2, 5)
    """
    n_chips = integer("n_chips", n_chips, minimum=1)
    return math.ceil(n_chips / specs.system(system).n_chips)


def layout_mtbf_s(n_chips: int, *, system: str = "trn2-ultraserver",
                  chip_mtbf_s: float | None = None, instance_mtbf_s: float | None = None,
                  domain_mtbf_s: float | None = None) -> float:
    """Job MTBF from failure rates of chips, instances and whole domains, for a layout.

    The job occupies ``domains_for_chips(n_chips, system)`` whole systems and
    stops if any chip, any instance (host, NICs, power...) or any system-level
    part (the UltraServer's inter-instance links) in them fails. Failure rates of
    independent exponential units add:
    ``1 / MTBF = D * (chips / chip_mtbf + instances / instance_mtbf + 1 / domain_mtbf)``.

    Parameters
    ----------
    n_chips : int
        Chips the job uses (>= 1).
    system : str
        A ``specs.system`` name; its ``n_chips`` and ``n_instances`` set the domain.
    chip_mtbf_s, instance_mtbf_s, domain_mtbf_s : float or None
        MTBF of one unit of each kind in seconds (> 0); ``None`` leaves that kind
        out. At least one must be given. These are assumptions you supply: the
        course has no published Trainium failure rates.

    Returns
    -------
    float
        Job MTBF in seconds.

    Examples
    --------
    >>> from trainium_lab.units import day, hour
    >>> round(layout_mtbf_s(64, chip_mtbf_s=64 * day) / hour, 6)  # 64 chips, 64 days each
    24.0
    >>> round(layout_mtbf_s(64, chip_mtbf_s=64 * day, instance_mtbf_s=4 * day) / hour, 6)
    12.0
    """
    spec = specs.system(system)
    n_domains = domains_for_chips(n_chips, spec)
    rate = 0.0
    given = False
    for name, value, count in (("chip_mtbf_s", chip_mtbf_s, spec.n_chips),
                               ("instance_mtbf_s", instance_mtbf_s, spec.n_instances),
                               ("domain_mtbf_s", domain_mtbf_s, 1)):
        if value is None:
            continue
        given = True
        rate += count / positive(name, value)
    if not given:
        raise ValueError("chip_mtbf_s, instance_mtbf_s or domain_mtbf_s: give at least one "
                         "(a finite number > 0)")
    return 1.0 / (n_domains * rate)


@dataclass(frozen=True)
class BlastRadius:
    """Which chips of one scale-up domain stop when a part fails: :func:`blast_radius`.

    Attributes
    ----------
    chips : pandas.DataFrame
        One row per chip: ``chip``, ``instance``, ``x``, ``y`` (position in the instance's
        2D torus, or a row for non-square instances), ``status`` (one of :data:`STATUSES`).
    failed, system, replacement : str
        What broke, in which system, and the unit swapped out.
    n_failed, n_replaced, n_stalled, n_stopped : int
        Chips in the broken part; healthy chips swapped out with it; healthy chips idle
        until the restart; every chip that stops (the whole domain).
    """

    chips: pd.DataFrame = field(repr=False)   # the repr stays one line; the table is a field
    failed: str
    system: str
    replacement: str
    n_failed: int
    n_replaced: int
    n_stalled: int
    n_stopped: int

    def _repr_markdown_(self) -> str:
        return (f"A failed {self.failed} in a {self.system} stops **{self.n_stopped} chips**: "
                f"{self.n_failed} failed, {self.n_replaced} healthy but replaced with it, "
                f"{self.n_stalled} healthy and waiting")


def blast_radius(failed: str = "chip", system: str = "trn2-ultraserver", *, chip: int = 0,
                 replacement: str = "system") -> BlastRadius:
    """Which chips of one scale-up domain stop when a chip, instance or UltraServer fails.

    Every chip of the domain stops: tensor- and pipeline-parallel collectives
    span it, so healthy chips wait on the missing ones until the job fails and
    restarts. The statuses say *why* each chip is out:

    * ``"failed"``: in the broken part (1 chip, its 16-chip instance, or all 64).
    * ``"replaced with it"``: healthy, but inside the unit that is swapped out
      (``replacement="instance"`` swaps the instance holding the failure;
      ``"system"`` swaps the whole domain: a rule of thumb for an UltraServer, so
      the NeuronLink ring between its four instances, which the Trn2 architecture
      page describes, stays intact).
    * ``"stalled (healthy, waiting)"``: healthy and not replaced, yet idle until
      the restart.

    Parameters
    ----------
    failed : {"chip", "instance", "ultraserver"}
        What broke. ``"ultraserver"`` needs a system of kind ultraserver.
    system : str
        A ``specs.system`` name.
    chip : int
        Index (0-based) of the chip that failed, or of any chip in the failed instance.
    replacement : {"system", "instance"}
        The unit that is swapped out after the failure.

    Returns
    -------
    BlastRadius
        ``chips`` (one row per chip: ``chip``, ``instance``, ``x``, ``y``, ``status``) and
        the counts ``n_failed``, ``n_replaced``, ``n_stalled``, ``n_stopped``.

    Examples
    --------
    >>> b = blast_radius("chip", replacement="instance")
    >>> b.n_failed, b.n_replaced, b.n_stalled, b.n_stopped
    (1, 15, 48, 64)
    >>> blast_radius("instance", "trn2.48xlarge").n_stopped
    16
    """
    spec = specs.system(system)
    failed = choice("failed", failed, FAILURE_LEVELS)
    replacement = choice("replacement", replacement, ("system", "instance"))
    if failed == "ultraserver" and spec.kind != "ultraserver":
        raise ValueError(f"failed='ultraserver' needs an UltraServer system; {spec.key} is a "
                         f"single {spec.kind} (choose 'chip' or 'instance')")
    chip = integer("chip", chip, minimum=0, maximum=spec.n_chips - 1)
    per = spec.chips_per_instance
    side = math.isqrt(per)
    if side * side != per:
        side = per  # not a square grid: draw one row per instance
    ids = np.arange(spec.n_chips)
    instance = ids // per
    local = ids % per
    failed_instance = chip // per
    if failed == "chip":
        is_failed = ids == chip
    elif failed == "instance":
        is_failed = instance == failed_instance
    else:
        is_failed = np.ones(spec.n_chips, dtype=bool)
    in_unit = np.ones(spec.n_chips, dtype=bool) if replacement == "system" else (
        instance == failed_instance)
    status = np.where(is_failed, STATUSES[0], np.where(in_unit, STATUSES[1], STATUSES[2]))
    df = pd.DataFrame({"chip": ids, "instance": instance, "x": local % side,
                       "y": local // side, "status": status})
    return BlastRadius(df, failed, spec.key, replacement, n_failed=int(is_failed.sum()),
                       n_replaced=int((in_unit & ~is_failed).sum()),
                       n_stalled=int((~in_unit & ~is_failed).sum()), n_stopped=int(spec.n_chips))


# ------------------------------------------------------------ checkpoint interval

def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum checkpoint interval, sqrt(2 δ M).

    Minimises the first-order lost fraction δ/τ + τ/(2M) (checkpoint overhead
    plus, on average, half an interval of rework per failure). Valid for
    checkpoint costs much smaller than the MTBF (δ << M); it ignores failures
    during checkpoints and restarts, and overestimates the interval: by about
    2δ/3 when δ << M (Daly's series, :func:`daly_interval_s`, adds δ/3 and takes
    δ off), by more as δ/M grows.

    Parameters
    ----------
    checkpoint_s : float
        Blocking time to write one checkpoint, δ, in seconds (> 0).
    mtbf_s : float
        Job-level mean time between failures, M, in seconds (> 0).

    Returns
    -------
    float
        Compute time between checkpoints, in seconds.

    References
    ----------
    [1]_ (its result T_c = sqrt(2 T_s T_f)).

    Examples
    --------
    A 90 s checkpoint and a 24 h MTBF:

    >>> from trainium_lab.units import hour, minute
    >>> round(young_interval_s(90, 24 * hour) / minute, 1)
    65.7
    """
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum checkpoint interval.

    τ = sqrt(2δM) · [1 + (1/3)·sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ   for δ < 2M,
    τ = M                                                        for δ ≥ 2M.

    A perturbation solution of Daly's complete model, in which failures may also
    strike during checkpoints and restarts; its optimum does not depend on the
    restart time. Accurate to well under 1 % of the exact optimum of that model
    (:func:`optimal_interval_s`) for δ up to about M/10; beyond δ = 2M Daly
    recommends simply τ = M.

    Parameters and the result (compute time between checkpoints, in seconds) as for
    :func:`young_interval_s`: δ is ``checkpoint_s``, M is ``mtbf_s``.

    References
    ----------
    [2]_ eq. 37; the same expression is coded in LLNL's SCR library
    (``scripts/python/scr_ckpt_interval.py``).

    Examples
    --------
    Daly's Fig. 3 case (δ = 5 min, M = 24 h) reports τ_opt = 117 min:

    >>> from trainium_lab.units import hour, minute
    >>> round(daly_interval_s(5 * minute, 24 * hour) / minute, 1)
    116.7
    """
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    ratio = checkpoint_s / (2.0 * mtbf_s)
    return (math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0)
            - checkpoint_s)


def _lambertw0(z: float) -> float:
    """Principal branch W0 of the Lambert W function for -1/e <= z < 0 (Halley iteration)."""
    if z <= -1.0 / math.e:
        return -1.0
    # start from the branch-point series, good near -1/e, then refine
    p = math.sqrt(2.0 * (math.e * z + 1.0))
    w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p ** 3
    for _ in range(50):
        ew = math.exp(w)
        f = w * ew - z
        step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= step
        if abs(step) <= 1e-15 * (1.0 + abs(w)):
            break
    return w


def optimal_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """The exact optimum interval of this module's cost model (exponential failures).

    Minimises the expected lost fraction of :func:`lost_fraction`, i.e.
    (exp((τ+δ)/M) − 1) / τ, whose minimum satisfies exp((τ+δ)/M)·(1 − τ/M) = 1:
    τ = M · (1 + W0(−exp(−1 − δ/M))), with W0 the principal Lambert W branch.
    Independent of the restart time. Defined for every δ > 0 and always below M.

    Parameters
    ----------
    checkpoint_s, mtbf_s : float
        δ and M in seconds (> 0).

    Returns
    -------
    float
        Seconds of compute between checkpoints.

    References
    ----------
    [2]_ section 3 (the complete model and its Lambert-function solution).

    Examples
    --------
    >>> from trainium_lab.units import hour, minute
    >>> round(optimal_interval_s(5 * minute, 24 * hour) / minute, 1)
    116.7
    """
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    ratio = checkpoint_s / mtbf_s
    if ratio < 1e-6:  # W0 loses digits near -1/e; the series is exact to O(ratio^1.5)
        return young_interval_s(checkpoint_s, mtbf_s) * (1 + math.sqrt(ratio / 2) / 3) - checkpoint_s
    return mtbf_s * (1.0 + _lambertw0(-math.exp(-1.0 - ratio)))


def checkpoint_cost_s(write_s: float, *, mode: str = "sync", snapshot_s: float | None = None) -> float:
    """The blocking checkpoint cost δ that training actually pays.

    ``"sync"``: training waits for the whole write to shared storage, δ = ``write_s``.
    ``"async"``: training waits only while the state is copied to host memory,
    δ = ``snapshot_s``; the upload to storage runs in the background. The upload
    must finish before the next snapshot (the interval must be at least
    ``write_s``), and a failure during an upload falls back one checkpoint
    further; this module neglects that extra rework (it is of order
    write_s / MTBF of an interval).

    Parameters
    ----------
    write_s : float
        Seconds to write one checkpoint to storage (> 0).
    mode : {"sync", "async"}
    snapshot_s : float, optional
        Seconds to copy the state to host memory (> 0, at most ``write_s``); needed for ``"async"``.

    Examples
    --------
    >>> checkpoint_cost_s(90), checkpoint_cost_s(90, mode="async", snapshot_s=10)
    (90.0, 10.0)
    """
    write_s = positive("write_s", write_s)
    mode = choice("mode", mode, ("sync", "async"))
    if mode == "sync":
        return write_s
    if snapshot_s is None:
        raise ValueError("snapshot_s must be given (a finite number > 0) when mode='async'")
    snapshot_s = positive("snapshot_s", snapshot_s)
    if snapshot_s > write_s:
        raise ValueError(f"snapshot_s must be in (0, write_s={write_s:g}], got {snapshot_s:g}")
    return snapshot_s


def _intervals(name: str, values) -> np.ndarray:
    arr = np.asarray(values, dtype=float) if not isinstance(values, (bool, str)) else None
    if arr is None or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite numbers > 0, got {str(values)[:40]}")
    return arr


def expected_segment_s(interval_s, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0):
    """Expected wall time to get one interval of work plus its checkpoint done.

    With failures at rate 1/M during work and checkpoint, a restart of R
    (itself failure-free) after each failure, and L = τ + δ:
    E = (M + R) · (exp(L/M) − 1). The expected number of failures per segment
    is exp(L/M) − 1.

    Parameters
    ----------
    interval_s : float or array
        Compute time τ between checkpoints, in seconds (> 0).
    checkpoint_s, mtbf_s : float
        δ and M in seconds (> 0).
    restart_s : float
        Time from a failure to computing again (detect, replace, reload), in seconds (>= 0).

    References
    ----------
    The renewal argument of [2]_ section 3; Daly also lets restarts fail, which
    multiplies by exp(R/M) instead of (1 + R/M) and leaves the optimum unchanged.

    Examples
    --------
    >>> round(expected_segment_s(3600, 60, 86400, 600), 1)
    3764.6
    """
    tau = _intervals("interval_s", interval_s)
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    restart_s = positive("restart_s", restart_s, allow_zero=True)
    with np.errstate(over="ignore"):
        out = (mtbf_s + restart_s) * np.expm1((tau + checkpoint_s) / mtbf_s)
    return float(out) if out.ndim == 0 else out


def lost_time_breakdown(interval_s, checkpoint_s: float, mtbf_s: float,
                        restart_s: float = 0.0) -> pd.DataFrame:
    """Expected fractions of wall time spent on each kind of loss, and on useful work.

    Per segment (see :func:`expected_segment_s`): useful τ; checkpoint writing δ
    (the successful write); restarts R·(e^{L/M} − 1); rework M·(e^{L/M} − 1) − L,
    the work (and partial checkpoints) lost to failures since the last checkpoint.

    Returns
    -------
    pandas.DataFrame
        Columns ``interval_s``, ``checkpoint``, ``rework``, ``restart``, ``lost``
        (their sum) and ``useful`` (= 1 − lost), one row per interval.

    Examples
    --------
    >>> row = lost_time_breakdown(3600, 60, 86400, 600).iloc[0]
    >>> round(float(row.lost), 4), round(float(row.checkpoint + row.rework + row.restart), 4)
    (0.0437, 0.0437)
    """
    tau = np.atleast_1d(_intervals("interval_s", interval_s))
    total = np.atleast_1d(expected_segment_s(tau, checkpoint_s, mtbf_s, restart_s))
    seg = tau + checkpoint_s
    with np.errstate(over="ignore", invalid="ignore"):
        failures = np.expm1(seg / mtbf_s)
        parts = {
            "checkpoint": checkpoint_s / total,
            "rework": (mtbf_s * failures - seg) / total,
            "restart": restart_s * failures / total,
        }
    df = pd.DataFrame({"interval_s": tau, **{k: np.nan_to_num(v) for k, v in parts.items()}})
    df["useful"] = np.nan_to_num(tau / total)
    df["lost"] = 1.0 - df["useful"]
    return df


def lost_fraction(interval_s, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0):
    """Expected fraction of wall time lost to checkpoints, rework and restarts.

    ``1 − τ / E`` with E from :func:`expected_segment_s`. Exact for the model in
    this module's docstring (periodic checkpoints, exponential failures).

    Examples
    --------
    >>> from trainium_lab.units import hour
    >>> tau = young_interval_s(90, 24 * hour)
    >>> round(lost_fraction(tau, 90, 24 * hour), 4)
    0.045
    """
    tau = _intervals("interval_s", interval_s)
    total = expected_segment_s(tau, checkpoint_s, mtbf_s, restart_s)
    out = 1.0 - tau / total
    return float(out) if np.ndim(out) == 0 else out


def lost_time_curve(checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0, *,
                    intervals_s: Sequence[float] | None = None, n: int = 60) -> pd.DataFrame:
    """The lost-time components over a range of intervals, one row per interval, for a chart.

    Default intervals: ``n`` points spaced logarithmically from Young's interval
    / 8 to × 8 (capped at 2 M and at least 1 s).

    Returns
    -------
    pandas.DataFrame
        ``interval_s``, ``interval_min`` and one column per component:
        ``checkpoint writing``, ``rework``, ``restart``, ``total lost`` (fractions
        of wall time).

    Examples
    --------
    >>> df = lost_time_curve(90, 86400, n=5)
    >>> list(df.columns)
    ['interval_s', 'interval_min', 'checkpoint writing', 'rework', 'restart', 'total lost']
    """
    n = integer("n", n, minimum=2, maximum=2000)
    if intervals_s is None:
        young = young_interval_s(checkpoint_s, mtbf_s)
        lo = max(young / 8.0, 1.0)
        hi = max(min(young * 8.0, 2.0 * mtbf_s), lo * 2.0)
        intervals_s = np.geomspace(lo, hi, n)
    wide = lost_time_breakdown(intervals_s, checkpoint_s, mtbf_s, restart_s)
    return pd.DataFrame({
        "interval_s": wide["interval_s"], "interval_min": wide["interval_s"] / minute,
        "checkpoint writing": wide["checkpoint"], "rework": wide["rework"],
        "restart": wide["restart"], "total lost": wide["lost"],
    })


def interval_markers(checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0) -> pd.DataFrame:
    """Young's, Daly's and the exact optimum intervals with their expected lost fraction.

    Examples
    --------
    >>> df = interval_markers(90, 86400)
    >>> list(df.method)
    ['Young', 'Daly', 'exact optimum']
    """
    rows = []
    for method, fn in (("Young", young_interval_s), ("Daly", daly_interval_s),
                       ("exact optimum", optimal_interval_s)):
        tau = fn(checkpoint_s, mtbf_s)
        rows.append((method, tau, tau / minute, lost_fraction(tau, checkpoint_s, mtbf_s, restart_s)))
    return pd.DataFrame(rows, columns=["method", "interval_s", "interval_min", "lost_fraction"])


# ------------------------------------------------------------------- Monte Carlo

@dataclass(frozen=True)
class MonteCarloResult:
    """Simulated long runs: wall time and failures of each run, plus the inputs."""

    interval_s: float
    checkpoint_s: float
    mtbf_s: float
    restart_s: float
    work_s: float
    seed: int
    wall_s: np.ndarray
    n_failures: np.ndarray

    @property
    def n_runs(self) -> int:
        """Number of simulated runs."""
        return int(self.wall_s.size)

    @property
    def goodput(self) -> np.ndarray:
        """Useful work / wall time of each run."""
        return self.work_s / self.wall_s

    @property
    def lost_fraction(self) -> float:
        """1 − total useful work / total wall time over all runs.

        Compare it with :attr:`analytic_lost_fraction`, the same quantity for runs of
        ``work_s``; :func:`lost_fraction` is the long-run rate, which differs slightly
        because a finite run ends with a shorter segment.
        """
        return float(1.0 - self.work_s / self.wall_s.mean())

    @property
    def analytic_lost_fraction(self) -> float:
        """The model's expected lost fraction for a run of ``work_s`` (from :attr:`expected_wall_s`)."""
        return float(1.0 - self.work_s / self.expected_wall_s)

    @property
    def lost_fraction_stderr(self) -> float:
        """Standard error of :attr:`lost_fraction` (delta method on the mean wall time)."""
        mean = self.wall_s.mean()
        se_mean = self.wall_s.std(ddof=1) / math.sqrt(self.n_runs) if self.n_runs > 1 else 0.0
        return float(self.work_s * se_mean / mean ** 2)

    @property
    def expected_wall_s(self) -> float:
        """The analytic expected wall time of one run, for comparison."""
        n_full, rest = divmod(self.work_s, self.interval_s)
        out = n_full * expected_segment_s(self.interval_s, self.checkpoint_s, self.mtbf_s,
                                          self.restart_s)
        if rest > 1e-9 * self.interval_s:
            out += expected_segment_s(rest, self.checkpoint_s, self.mtbf_s, self.restart_s)
        return float(out)

    def summary(self) -> pd.DataFrame:
        """One-row table: simulated and analytic lost fraction, mean goodput, failures per run.

        ``analytic`` is :attr:`analytic_lost_fraction`: the expectation for runs of the same
        length as the simulated ones, the value the simulation estimates.
        """
        return pd.DataFrame([{
            "interval_min": self.interval_s / minute, "runs": self.n_runs,
            "lost_fraction": self.lost_fraction, "stderr": self.lost_fraction_stderr,
            "analytic": self.analytic_lost_fraction,
            "mean_goodput": float(self.goodput.mean()),
            "failures_per_run": float(self.n_failures.mean()),
        }])


def simulate_runs(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0,
                  *, work_s: float, n_runs: int = 100_000, seed: int = 0) -> MonteCarloResult:
    """Monte Carlo of many long training runs under exponential failures.

    Each run must complete ``work_s`` of useful compute. It works in segments of
    ``interval_s`` (the last one shorter if needed), each followed by a blocking
    checkpoint of ``checkpoint_s``. Failures arrive with exponential gaps of mean
    ``mtbf_s`` while computing or checkpointing; each costs ``restart_s`` and
    sends the run back to its last completed checkpoint. Runs are simulated side
    by side, one failure per loop iteration for all still-running runs.

    Parameters
    ----------
    interval_s, checkpoint_s, mtbf_s : float
        τ, δ, M in seconds (> 0).
    restart_s : float
        R in seconds (>= 0).
    work_s : float
        Useful compute each run needs, in seconds (> 0).
    n_runs : int
        Runs to simulate (1 to 10,000,000).
    seed : int
        Seed of ``numpy.random.default_rng``: the same seed gives the same result.

    Returns
    -------
    MonteCarloResult

    Examples
    --------
    >>> from trainium_lab.units import day, hour
    >>> mc = simulate_runs(3600, 90, 24 * hour, 600, work_s=30 * day, n_runs=2000, seed=1)
    >>> abs(mc.lost_fraction - lost_fraction(3600, 90, 24 * hour, 600)) < 4 * mc.lost_fraction_stderr
    True
    """
    interval_s = positive("interval_s", interval_s)
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    restart_s = positive("restart_s", restart_s, allow_zero=True)
    work_s = positive("work_s", work_s)
    n_runs = integer("n_runs", n_runs, minimum=1, maximum=10_000_000)
    seed = integer("seed", seed, minimum=0)
    seg = interval_s + checkpoint_s
    n_full, rest = divmod(work_s, interval_s)
    n_full = int(n_full)
    tail = rest + checkpoint_s if rest > 1e-9 * interval_s else 0.0
    expected_failures = n_full * math.expm1(seg / mtbf_s) + (math.expm1(tail / mtbf_s) if tail else 0)
    if expected_failures > 1e5:
        raise ValueError(f"interval_s + checkpoint_s ({seg:g} s) is too long for mtbf_s "
                         f"({mtbf_s:g} s): about {expected_failures:.3g} failures per run expected; "
                         "the simulation allows at most 1e5")
    rng = np.random.default_rng(seed)
    wall = np.zeros(n_runs)
    fails = np.zeros(n_runs, dtype=np.int64)
    active = np.arange(n_runs)
    done = np.zeros(n_runs, dtype=np.int64)  # completed full segments of the active runs
    t = np.zeros(n_runs)
    while active.size:
        need = (n_full - done) * seg + tail
        gap = rng.exponential(mtbf_s, size=active.size)
        finish = gap >= need
        if finish.any():
            wall[active[finish]] = t[finish] + need[finish]
            keep = ~finish
            active, done, t, gap, need = active[keep], done[keep], t[keep], gap[keep], need[keep]
            if not active.size:
                break
        done = np.minimum(done + np.floor(gap / seg).astype(np.int64), n_full)
        t = t + gap + restart_s
        fails[active] += 1
    return MonteCarloResult(interval_s, checkpoint_s, mtbf_s, restart_s, work_s, seed, wall, fails)


def simulated_lost_fraction(intervals_s: Sequence[float], checkpoint_s: float, mtbf_s: float,
                            restart_s: float = 0.0, *, work_s: float, n_runs: int = 20_000,
                            seed: int = 0) -> pd.DataFrame:
    """Monte Carlo lost fraction at several intervals, with a 95 % band, for a chart.

    Runs :func:`simulate_runs` once per interval (seeds ``seed``, ``seed + 1``, ...).

    Returns
    -------
    pandas.DataFrame
        ``interval_s``, ``interval_min``, ``lost_fraction``, ``low``, ``high``
        (± 1.96 standard errors), ``analytic`` (:func:`lost_fraction`), ``runs``.

    Examples
    --------
    >>> df = simulated_lost_fraction([1800, 3600], 90, 86400, 600, work_s=30 * 86400, n_runs=500)
    >>> list(df.columns)
    ['interval_s', 'interval_min', 'lost_fraction', 'low', 'high', 'analytic', 'runs']
    """
    taus = np.atleast_1d(_intervals("intervals_s", intervals_s))
    seed = integer("seed", seed, minimum=0)
    rows = []
    for i, tau in enumerate(taus):
        mc = simulate_runs(float(tau), checkpoint_s, mtbf_s, restart_s, work_s=work_s,
                           n_runs=n_runs, seed=seed + i)
        half = 1.96 * mc.lost_fraction_stderr
        rows.append((float(tau), tau / minute, mc.lost_fraction, mc.lost_fraction - half,
                     mc.lost_fraction + half, lost_fraction(float(tau), checkpoint_s, mtbf_s,
                                                            restart_s), mc.n_runs))
    return pd.DataFrame(rows, columns=["interval_s", "interval_min", "lost_fraction", "low",
                                       "high", "analytic", "runs"])


# ----------------------------------------------------------- published failures

@dataclass(frozen=True)
class Llama3Summary:
    """Meta's Llama 3 405B pre-training interruptions, as counts and derived rates."""

    n_interruptions: int
    period_s: float
    n_gpus: int

    @property
    def mean_time_between_interruptions_s(self) -> float:
        """Period / interruptions: the job-level mean time between unexpected interruptions."""
        return self.period_s / self.n_interruptions

    @property
    def per_gpu_mtbf_s(self) -> float:
        """GPU-seconds per interruption: an illustrative per-accelerator MTBF (GPU-cluster proxy).

        Every interruption of the 16,384-GPU job counted against the GPUs it held,
        whatever its cause (GPU, host, network, software), so this is the
        per-accelerator MTBF that reproduces the job's interruption rate through
        ``job_mtbf_s``, not a measured failure rate of one GPU or of a Trainium chip.
        The GPU count is the course's reading: the paper trains on "up to 16K" GPUs
        (its Table 4 lists 8,192- and 16,384-GPU stages) and gives no count for the
        54-day window; this figure scales with it.
        """
        return self.period_s * self.n_gpus / self.n_interruptions


def llama3_interruptions() -> pd.DataFrame:
    """Table 5 of the Llama 3 paper: unexpected interruptions by root cause.

    Adds ``share`` computed from the counts (the printed percentages are kept in
    ``printed_percent`` but do not all match the counts).

    Examples
    --------
    >>> df = llama3_interruptions()
    >>> int(df.interruptions.sum()), round(float(df.share.iloc[0]) * 100, 1), float(df.printed_percent.iloc[0])
    (419, 35.3, 30.1)
    """
    df = specs.read_data_csv("llama3_interruptions.csv")
    df["share"] = df["interruptions"] / df["interruptions"].sum()
    return df


def llama3_summary() -> Llama3Summary:
    """Totals of :func:`llama3_interruptions`: 419 interruptions in 54 days on 16,384 GPUs.

    Examples
    --------
    >>> from trainium_lab.units import hour
    >>> s = llama3_summary()
    >>> s.n_interruptions, round(s.mean_time_between_interruptions_s / hour, 2)
    (419, 3.09)
    """
    df = specs.read_data_csv("llama3_interruptions.csv")
    for col in ("period_days", "n_gpus"):
        if df[col].nunique() != 1:
            raise ValueError(f"llama3_interruptions.csv: {col} must be the same on every row")
    return Llama3Summary(int(df["interruptions"].sum()), float(df["period_days"].iloc[0]) * day,
                         int(df["n_gpus"].iloc[0]))


def mtbf_vs_job_size(chip_mtbf_s: float, system: str = "trn2-ultraserver", *,
                     max_domains: int = 1024) -> pd.DataFrame:
    """Job MTBF for jobs of one instance up to ``max_domains`` whole systems.

    Every chip is taken to fail independently with MTBF ``chip_mtbf_s`` (an
    assumption you supply), and a job holds whole systems, so a job of ``k``
    systems depends on ``k × n_chips`` chips.

    Returns
    -------
    pandas.DataFrame
        ``n_chips``, ``label``, ``mtbf_s``, ``mtbf_h``: one instance, then 1, 2, 4, ...
        systems up to ``max_domains``.

    Examples
    --------
    >>> from trainium_lab.units import day
    >>> df = mtbf_vs_job_size(64 * day, max_domains=4)
    >>> df.n_chips.tolist(), df.mtbf_h.round(1).tolist()
    ([16, 64, 128, 256], [96.0, 24.0, 12.0, 6.0])
    """
    chip_mtbf_s = positive("chip_mtbf_s", chip_mtbf_s)
    max_domains = integer("max_domains", max_domains, minimum=1, maximum=1_000_000)
    spec = specs.system(system)
    rows = []
    if spec.n_instances > 1:
        rows.append((spec.chips_per_instance, "1 instance"))
    k = 1
    while k <= max_domains:
        rows.append((k * spec.n_chips, f"{k} × {spec.name}"))
        k *= 2
    df = pd.DataFrame(rows, columns=["n_chips", "label"])
    df["mtbf_s"] = [job_mtbf_s(chip_mtbf_s, n) for n in df["n_chips"]]
    df["mtbf_h"] = df["mtbf_s"] / hour
    return df


# ----------------------------------------------------- operational failure modes

_FAILURE_COLUMNS = ["failure_mode", "symptom", "cause", "fix", "source"]


@functools.cache
def _failure_modes() -> pd.DataFrame:
    """``data/failure_modes.csv`` with ``source`` the row's citation (read on first use)."""
    df = specs.read_data_csv("failure_modes.csv")   # adds "source" (title) and "reference"
    df["source"] = df["citation"]
    return df


def __getattr__(name: str):
    # FAILURE_MODES: (failure mode, symptom, cause, fix, source) rows, as the old constant held
    # them; computed from data/failure_modes.csv on first use, so importing reads no file
    if name == "FAILURE_MODES":
        return tuple(tuple(r) for r in _failure_modes()[_FAILURE_COLUMNS].itertuples(index=False))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def failure_modes(query: str = "") -> pd.DataFrame:
    """The operational failure modes (``data/failure_modes.csv``), optionally filtered by a search.

    Each row cites a public page that explains the mechanism (``source_id`` in
    ``data/sources.csv``); where the practice itself is a rule of thumb, the citation says so
    and names the chapter whose model shows why.

    Parameters
    ----------
    query : str
        Case-insensitive words; a row is kept if every word appears in its failure mode,
        symptom, cause, fix or citation.

    Returns
    -------
    pandas.DataFrame
        ``failure_mode, symptom, cause, fix, source`` (the citation, as a learner reads it),
        ``source_id`` and ``reference`` (where to find the source).

    Examples
    --------
    >>> len(failure_modes()) >= 10
    True
    >>> list(failure_modes("lnc load").failure_mode)
    ['LNC mismatch']
    >>> failure_modes("lnc load").source_id.tolist()
    ['aws-lnc']
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be text, got {type(query).__name__}")
    df = _failure_modes()[_FAILURE_COLUMNS + ["source_id", "reference"]].copy()
    words = query.lower().split()
    if words:
        text = [" ".join(values).lower() for values in df[_FAILURE_COLUMNS].itertuples(index=False)]
        keep = np.array([all(w in s for w in words) for s in text], dtype=bool)
        df = df[keep].reset_index(drop=True)
    return df


# ======================================================================================
# Checkpoint size and storage, automatic resume, and traces to read (chapter 06, issue 15)
#
# References for this part:
# PyTorch recipe "Saving and loading a general checkpoint in PyTorch" (what a checkpoint holds);
# Amazon FSx for Lustre User Guide, "Managing provisioned throughput capacity" and "Performance
# characteristics of SSD and HDD storage classes" (throughput per TiB of storage);
# Amazon SageMaker HyperPod, "Automatic node recovery and auto-resume", "health-monitoring agent"
# and "Suggested resilience configurations" (what auto-resume does; deep health checks take
# about a couple of hours per new instance); the M/G/inf queue (Palm's theorem) for spare pools,
# e.g. L. Kleinrock, Queueing Systems, Vol. 1, Wiley 1975 (see each docstring).

import functools  # noqa: E402  (this part's own imports, kept here so merges stay easy)

from trainium_lab._validate import finite_number, in_range  # noqa: E402

__all__ += [
    "recovery_facts", "fsx_throughput_options_mb_per_s_per_tib", "deep_health_check_s",
    "hyperpod_fsx_size_range_bytes",
    "checkpoint_bytes", "fsx_lustre_bytes_per_s", "llama3_storage_bytes_per_s",
    "llama3_effective_training_fraction", "fsx_demonstrated_bytes_per_s", "s3_part_size_range_bytes",
    "s3_put_requests_per_s_per_prefix", "s3_write_bytes_per_s", "checkpoint_write_s", "young_lost_fraction",
    "RESUME_POLICIES", "Recovery", "spare_shortfall_probability", "resume_recovery",
    "goodput_vs_job_size",
    "TIMELINE_KINDS", "LOG_EVENTS", "training_timeline", "timeline_log",
    "RANK_STATES", "HANG_CAUSES", "collective_trace",
]

#: how a job comes back after a failure (see :func:`resume_recovery`)
RESUME_POLICIES = ("manual restart", "auto-resume", "auto-resume + spares")
#: what the job is doing in each segment of :func:`training_timeline`
TIMELINE_KINDS = ("compute", "checkpoint", "compile", "failure", "wait", "replace", "load")
#: the lines of a training log, as :func:`timeline_log` lists them
LOG_EVENTS = ("job started", "checkpoint loaded", "step done", "checkpoint saved", "failure")
#: what each rank is doing in :func:`collective_trace`
RANK_STATES = ("compute", "waiting for other ranks", "collective transfer",
               "exited: device error", "blocked in another collective", "blocked until timeout")
#: what goes wrong in :func:`collective_trace`
HANG_CAUSES = ("none", "device error", "mismatched collective", "slow rank")

_MAX_STEPS = 1_000_000
_MAX_EVENTS = 10_000


@functools.lru_cache(maxsize=1)
def _recovery_facts_table() -> pd.DataFrame:
    return specs.read_data_csv("recovery_facts.csv")


def recovery_facts(topic: str | None = None) -> pd.DataFrame:
    """Sourced facts on checkpoints, FSx for Lustre and S3 throughput and HyperPod recovery.

    From ``data/recovery_facts.csv``. No AWS page gives detection, provisioning or
    restart times; the only time figure is the deep health check of a new instance.

    Parameters
    ----------
    topic : {"checkpoint", "fsx lustre", "hyperpod", "hyperpod tiered checkpointing", "llama3 storage", "s3"}, optional
        Keep one topic.

    Examples
    --------
    >>> sorted(recovery_facts().topic.unique())  # doctest: +NORMALIZE_WHITESPACE
    ['checkpoint', 'fsx lustre', 'hyperpod', 'hyperpod checkpointless training',
     'hyperpod tiered checkpointing', 'llama3 storage', 's3']
    """
    df = _recovery_facts_table().copy()
    if topic is not None:
        topic = choice("topic", topic, tuple(df["topic"].unique()))
        df = df[df["topic"] == topic].reset_index(drop=True)
    return df


@functools.cache
def _fact_value(topic: str, fact: str) -> tuple[str, str]:
    df = recovery_facts()
    row = df[(df.topic == topic) & (df.fact == fact) & (df.status == "used")]
    if len(row) != 1:
        raise ValueError(f"recovery_facts.csv: expected one used row for {topic!r} / {fact!r}")
    return str(row.value.iloc[0]), str(row.unit.iloc[0])


@functools.cache
def fsx_throughput_options_mb_per_s_per_tib() -> tuple[float, ...]:
    """The throughput tiers of an FSx for Lustre Persistent-2 SSD file system, in MB/s per TiB.

    References
    ----------
    Amazon FSx for Lustre User Guide, "Managing provisioned throughput capacity".

    Examples
    --------
    >>> fsx_throughput_options_mb_per_s_per_tib()
    (125.0, 250.0, 500.0, 1000.0)
    """
    value, _ = _fact_value("fsx lustre", "persistent-2 SSD throughput per unit of storage")
    return tuple(float(v) for v in value.split(";"))


def _fact_range(topic: str, fact: str, unit: str, unit_bytes: float) -> tuple[float, float]:
    """A "low;high" row of ``recovery_facts.csv`` in ``unit``, as bytes (the unit is checked)."""
    value, stored = _fact_value(topic, fact)
    if stored != unit:
        raise ValueError(f"recovery_facts.csv: {topic} {fact!r} unit must be {unit}, got {stored!r}")
    low, high = (float(v) * unit_bytes for v in value.split(";"))
    return low, high


@functools.cache
def hyperpod_fsx_size_range_bytes() -> tuple[float, float]:
    """Smallest and largest FSx for Lustre file system a HyperPod cluster creates, in bytes.

    References
    ----------
    Amazon SageMaker API Reference, ``FSxLustreConfig`` (``SizeInGiB``: 1,200 to 100,800).

    Examples
    --------
    >>> from trainium_lab.units import GiB
    >>> [b / GiB for b in hyperpod_fsx_size_range_bytes()]
    [1200.0, 100800.0]
    """
    from trainium_lab.units import GiB

    return _fact_range("hyperpod", "FSx for Lustre file system size a HyperPod cluster can create", "GiB", GiB)


@functools.cache
def deep_health_check_s() -> float:
    """Seconds a new HyperPod instance spends in deep health checks (AWS: "about a couple of hours").

    References
    ----------
    Amazon SageMaker HyperPod, "Suggested resilience configurations".

    Examples
    --------
    >>> from trainium_lab.units import hour
    >>> deep_health_check_s() / hour
    2.0
    """
    from trainium_lab.units import hour

    value, unit = _fact_value("hyperpod", "deep health check of a new instance")
    if unit != "hour":
        raise ValueError(f"recovery_facts.csv: deep health check unit must be hour, got {unit!r}")
    return float(value) * hour


def llama3_storage_bytes_per_s(kind: str = "sustained") -> float:
    """Throughput of the storage Meta's Llama 3 405B run checkpointed to, in bytes/s.

    Parameters
    ----------
    kind : {"sustained", "peak"}

    References
    ----------
    Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024), §3.3.1
    (Tectonic: 2 TB/s sustainable, 7 TB/s peak).

    Examples
    --------
    >>> from trainium_lab.units import TB
    >>> llama3_storage_bytes_per_s() / TB, llama3_storage_bytes_per_s("peak") / TB
    (2.0, 7.0)
    """
    from trainium_lab.units import TB

    kind = choice("kind", kind, ("sustained", "peak"))
    value, unit = _fact_value("llama3 storage", f"{kind} throughput of the checkpoint storage of the "
                                                "Llama 3 405B run")
    if unit != "TB/s":
        raise ValueError(f"recovery_facts.csv: Llama 3 storage unit must be TB/s, got {unit!r}")
    return float(value) * TB


def llama3_effective_training_fraction() -> float:
    """The effective training time Meta reports for the Llama 3 405B run: "higher than 90 %".

    References
    ----------
    arXiv:2407.21783, §3.3.4 (over the 54-day snapshot of Table 5).

    Examples
    --------
    >>> llama3_effective_training_fraction()
    0.9
    """
    value, unit = _fact_value("llama3 storage", "effective training time of the Llama 3 405B run")
    if unit != "fraction":
        raise ValueError(f"recovery_facts.csv: effective training time unit must be fraction, got {unit!r}")
    return float(value)


def fsx_demonstrated_bytes_per_s() -> float:
    """Throughput of the largest FSx for Lustre file system AWS has shown built on demand, bytes/s.

    The 1.1 PiB file system of AWS's HPC blog ("over a terabyte per second") at the top
    Persistent-2 tier (:func:`fsx_throughput_options_mb_per_s_per_tib`), through
    :func:`fsx_lustre_bytes_per_s`: a file system built outside HyperPod; the planner's default
    storage is the largest one HyperPod creates (``planning.default_storage_bytes_per_s``, chapter 06).

    References
    ----------
    AWS HPC Blog, "Build and deploy a 1 TB/s file system in under an hour" (2023); Amazon FSx for
    Lustre User Guide, "Managing provisioned throughput capacity".

    Examples
    --------
    >>> from trainium_lab.units import TB
    >>> round(fsx_demonstrated_bytes_per_s() / TB, 3)
    1.153
    """
    from trainium_lab.units import PiB

    value, unit = _fact_value("fsx lustre", "file system size AWS demonstrated at over 1 TB/s")
    if unit != "PiB":
        raise ValueError(f"recovery_facts.csv: demonstrated FSx size unit must be PiB, got {unit!r}")
    return fsx_lustre_bytes_per_s(float(value) * PiB, max(fsx_throughput_options_mb_per_s_per_tib()))


def s3_put_requests_per_s_per_prefix() -> float:
    """PUT requests per second Amazon S3 sustains per partitioned prefix, at least (3,500).

    References
    ----------
    Amazon S3 User Guide, "Best practices design patterns: optimizing Amazon S3 performance";
    AWS Knowledge Center, "How can I scale my request rate to S3" (no limit to the number of prefixes).

    Examples
    --------
    >>> s3_put_requests_per_s_per_prefix()
    3500.0
    """
    value, unit = _fact_value("s3", "PUT requests per second per partitioned prefix")
    if unit != "requests/s":
        raise ValueError(f"recovery_facts.csv: S3 request rate unit must be requests/s, got {unit!r}")
    return float(value)


def s3_part_size_range_bytes() -> tuple[float, float]:
    """Smallest and largest part of an S3 multipart upload, in bytes (5 MiB and 5 GiB).

    References
    ----------
    Amazon S3 User Guide, "Amazon S3 multipart upload limits".

    Examples
    --------
    >>> from trainium_lab.units import MiB
    >>> [b / MiB for b in s3_part_size_range_bytes()]
    [5.0, 5120.0]
    """
    from trainium_lab.units import MiB

    return _fact_range("s3", "multipart upload part size", "MiB", MiB)


def s3_write_bytes_per_s(n_prefixes: int, part_bytes: float | None = None) -> float:
    """Write throughput Amazon S3 guarantees at least: prefixes × PUT requests/s per prefix × part size.

    A sharded checkpoint written as multipart uploads, each request one part, each writer under
    its own prefix. S3 sets no limit on the number of prefixes, so this is a floor that grows
    with the writers, not a ceiling: the writers' own network is what bounds a large job.

    Parameters
    ----------
    n_prefixes : int
        Partitioned prefixes written in parallel (>= 1), e.g. one per instance.
    part_bytes : float, optional
        Bytes per part, within :func:`s3_part_size_range_bytes`; default the smallest, 5 MiB
        (the most conservative reading).

    References
    ----------
    Amazon S3 User Guide, "Best practices design patterns: optimizing Amazon S3 performance" and
    "Amazon S3 multipart upload limits".

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> round(s3_write_bytes_per_s(1) / GB, 2)      # one prefix, 5 MiB parts: 3,500 × 5 MiB
    18.35
    """
    from trainium_lab._validate import in_range

    n_prefixes = integer("n_prefixes", n_prefixes, minimum=1, maximum=10**8)
    low, high = s3_part_size_range_bytes()
    part = low if part_bytes is None else in_range("part_bytes", part_bytes, low, high)
    return n_prefixes * s3_put_requests_per_s_per_prefix() * part


def checkpoint_bytes(n_params: float, recipe: str = "bf16-adam") -> float:
    """Bytes one checkpoint for resuming training holds: the training state minus the gradients.

    A checkpoint saves the model's and the optimizer's state (weights, master copy,
    optimizer moments); gradients are recomputed at every step and are not saved. For
    BF16 mixed precision with Adam that is 2 + 4 + 4 + 4 = 14 bytes per parameter.

    Parameters
    ----------
    n_params : float
        Parameters (> 0).
    recipe : str
        A ``sizing.RECIPES`` key (chapter 04).

    References
    ----------
    PyTorch recipe "Saving and loading a general checkpoint in PyTorch" (model and
    optimizer ``state_dict``); Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1
    (the bytes per parameter of each component).

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> checkpoint_bytes(70e9) / GB
    980.0
    """
    from trainium_lab import sizing

    n_params = in_range("n_params", n_params, 0.0, 1e18, low_open=True)
    r = sizing.recipe(recipe)
    return n_params * (r.bytes_per_param - r.gradients)


def fsx_lustre_bytes_per_s(storage_bytes: float, mb_per_s_per_tib: float) -> float:
    """Throughput of an FSx for Lustre Persistent-2 SSD file system: capacity × throughput per TiB.

    AWS sizes these file systems in GiB (1,200 GiB, 2,400 GiB, then multiples of
    2,400 GiB) and calls those sizes "1.2 TiB" and "2.4 TiB": in this formula AWS's
    "TiB" of storage is 1,000 GiB. Its own example: a 2.4-TiB file system at
    50 MB/s/TiB yields 120 MB/s (2,400 GiB / 1,000 × 50). So the throughput is
    capacity in GiB / 1,000 × the tier.

    Parameters
    ----------
    storage_bytes : float
        Storage capacity in bytes (> 0), e.g. ``24_000 * GiB`` for what the console
        calls 24 TiB.
    mb_per_s_per_tib : float
        The throughput tier, one of :func:`fsx_throughput_options_mb_per_s_per_tib`
        (MB/s per TiB, MB taken as 10**6 bytes).

    Returns
    -------
    float
        Bytes per second the file system sustains (read or write), shared by all clients.

    References
    ----------
    Amazon FSx for Lustre User Guide, "Managing provisioned throughput capacity": file
    system throughput = storage capacity (TiB) × throughput per unit of storage; Amazon
    FSx API Reference, ``CreateFileSystemLustreConfiguration``, ``PerUnitStorageThroughput``
    (the 2.4-TiB, 50 MB/s/TiB, 120 MB/s example) and ``CreateFileSystem``,
    ``StorageCapacity`` (1200 GiB, 2400 GiB and multiples of 2400 GiB).

    Examples
    --------
    >>> from trainium_lab.units import GB, GiB
    >>> fsx_lustre_bytes_per_s(48_000 * GiB, 1000) / GB
    48.0
    """
    from trainium_lab.units import MB, GiB

    storage_bytes = in_range("storage_bytes", storage_bytes, 0.0, 1e21, low_open=True)
    mb_per_s_per_tib = choice("mb_per_s_per_tib", finite_number("mb_per_s_per_tib", mb_per_s_per_tib),
                              fsx_throughput_options_mb_per_s_per_tib())
    return storage_bytes / (1000 * GiB) * mb_per_s_per_tib * MB


def checkpoint_write_s(state_bytes: float, bandwidth_bytes_per_s: float) -> float:
    """Seconds to write (or read back) a checkpoint: bytes / storage bandwidth.

    Assumes every rank writes its shard in parallel, so the shared storage is the
    bottleneck (true when the file system is slower than the instances' network).

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> checkpoint_write_s(980 * GB, 12 * GB)
    81.66666666666667
    """
    state_bytes = in_range("state_bytes", state_bytes, 0.0, 1e24, low_open=True)
    bandwidth_bytes_per_s = in_range("bandwidth_bytes_per_s", bandwidth_bytes_per_s, 0.0, 1e18,
                                     low_open=True)
    return state_bytes / bandwidth_bytes_per_s


def young_lost_fraction(checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """The rule of thumb for the share of time lost at Young's interval: sqrt(2δ/M) + R/M.

    At τ = sqrt(2δM) the two first-order terms δ/τ (writing) and τ/(2M) (rework)
    are equal, each sqrt(δ/(2M)); a restart R per failure adds R/M. It never
    falls below the exact value (:func:`lost_fraction` at Young's interval), and its
    relative error is at most its own value: 5 % off when 5 % is lost (checked for
    δ ≤ M/20 and R ≤ M/5).

    References
    ----------
    [1]_ (the first-order cost and its minimum).

    Examples
    --------
    >>> from trainium_lab.units import hour
    >>> round(young_lost_fraction(90, 24 * hour), 4)
    0.0456
    """
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    mtbf_s = positive("mtbf_s", mtbf_s)
    restart_s = positive("restart_s", restart_s, allow_zero=True)
    return math.sqrt(2.0 * checkpoint_s / mtbf_s) + restart_s / mtbf_s


# ----------------------------------------------------------------- automatic resume

@dataclass(frozen=True)
class Recovery:
    """Expected time from a failure to computing again, by part, in seconds.

    ``detect_s``: until the job is stopped and recovery starts (a collective
    timeout, a person, or a health agent); ``replace_s``: until a healthy node
    stands in (expected over whether a spare is free); ``load_s``: reading the
    checkpoint back; ``compile_s``: compiling graphs the restarted job cannot find
    in a cache; ``shortfall_probability``: the chance that a failure finds no spare.
    """

    policy: str
    detect_s: float
    replace_s: float
    load_s: float
    compile_s: float
    shortfall_probability: float

    @property
    def total_s(self) -> float:
        """The restart time R of the lost-time model."""
        return self.detect_s + self.replace_s + self.load_s + self.compile_s

    def parts(self) -> dict[str, float]:
        """``{"detect": s, "replace": s, "load": s, "compile": s}``, for a chart."""
        return {"detect": self.detect_s, "replace": self.replace_s, "load": self.load_s,
                "compile": self.compile_s}

    def _repr_markdown_(self) -> str:
        from trainium_lab.units import format_seconds

        return (f"**{self.policy}**: R = **{format_seconds(self.total_s)}** (detect "
                f"{format_seconds(self.detect_s)}, replace {format_seconds(self.replace_s)}, load "
                f"{format_seconds(self.load_s)}, compile {format_seconds(self.compile_s)}); "
                f"no spare free {self.shortfall_probability:.1%} of the time.")


def spare_shortfall_probability(mtbf_s: float, turnaround_s: float, n_spares: int) -> float:
    """Chance that a failure finds every spare node already in use.

    Failures arrive at rate 1/M and each takes a node out of the spare pool for
    ``turnaround_s`` (provisioning a replacement and checking it). The number of
    nodes away at a random moment is Poisson with mean T/M, whatever the
    distribution of T (the M/G/∞ queue, Palm's theorem), and by PASTA a failure
    sees that distribution: P(shortfall) = P(Poisson(T/M) ≥ k).

    Parameters
    ----------
    mtbf_s : float
        Job MTBF M in seconds (> 0).
    turnaround_s : float
        Seconds until a used spare is replaced in the pool (>= 0).
    n_spares : int
        Spare nodes kept ready (0 to 10,000); 0 gives 1.

    References
    ----------
    L. Kleinrock, *Queueing Systems, Volume 1: Theory*, Wiley 1975 (the M/G/∞
    system: the number in service is Poisson with mean λ·E[T]); R. W. Wolff,
    "Poisson arrivals see time averages", Operations Research 30(2), 1982.

    Examples
    --------
    >>> round(spare_shortfall_probability(10.0, 5.0, 1), 4)  # 1 - exp(-0.5)
    0.3935
    >>> spare_shortfall_probability(10.0, 5.0, 0)
    1.0
    """
    mtbf_s = positive("mtbf_s", mtbf_s)
    turnaround_s = positive("turnaround_s", turnaround_s, allow_zero=True)
    n_spares = integer("n_spares", n_spares, minimum=0, maximum=10_000)
    mu = turnaround_s / mtbf_s
    if n_spares == 0:
        return 1.0
    if mu == 0.0:
        return 0.0
    if mu > 1e5:  # the pool is always empty; exp(-mu) underflows
        return 1.0
    # P(X <= k-1) summed in log space so large mu does not underflow term by term
    log_terms = [-mu + i * math.log(mu) - math.lgamma(i + 1) for i in range(n_spares)]
    top = max(log_terms)
    below = math.exp(top) * sum(math.exp(t - top) for t in log_terms)
    return float(min(1.0, max(0.0, 1.0 - below)))


def resume_recovery(policy: str, *, mtbf_s: float, manual_detect_s: float, auto_detect_s: float,
                    swap_s: float, provision_s: float, health_check_s: float, load_s: float,
                    compile_s: float, n_spares: int = 0) -> Recovery:
    """The restart time R of a job under one of three recovery policies.

    * ``"manual restart"``: the job stops at a collective timeout and someone
      restarts it (``manual_detect_s``); a new instance is provisioned
      (``provision_s``), without a deep health check.
    * ``"auto-resume"`` (HyperPod-style, no spares): a health agent detects the
      fault (``auto_detect_s``); automatic node recovery replaces the node
      (``provision_s`` + ``health_check_s``) and auto-resume restarts the job from
      its last checkpoint.
    * ``"auto-resume + spares"``: as above, but a checked spare node swaps in
      (``swap_s``) unless all ``n_spares`` are away (see
      :func:`spare_shortfall_probability`, turnaround provision + health check);
      then the job waits as without spares (an upper bound: the first spare back
      may arrive sooner).

    Every policy then reads the checkpoint (``load_s``) and compiles what its cache
    lacks (``compile_s``). All times are inputs in seconds (>= 0): AWS publishes
    none of them except the deep health check (:func:`deep_health_check_s`).

    References
    ----------
    Amazon SageMaker HyperPod, "Automatic node recovery and auto-resume" and
    "Suggested resilience configurations".

    Examples
    --------
    >>> r = resume_recovery("auto-resume", mtbf_s=36000, manual_detect_s=3600, auto_detect_s=60,
    ...                     swap_s=300, provision_s=1200, health_check_s=7200, load_s=60, compile_s=0)
    >>> r.total_s
    8520.0
    """
    policy = choice("policy", policy, RESUME_POLICIES)
    mtbf_s = positive("mtbf_s", mtbf_s)
    t = _recovery_times(manual_detect_s=manual_detect_s, auto_detect_s=auto_detect_s,
                        swap_s=swap_s, provision_s=provision_s, health_check_s=health_check_s,
                        load_s=load_s, compile_s=compile_s)
    n_spares = integer("n_spares", n_spares, minimum=0, maximum=10_000)
    return _recovery(policy, mtbf_s, t, n_spares)


def _recovery_times(**times: float) -> dict[str, float]:
    out = {}
    for name, value in times.items():
        out[name] = positive(name, value, allow_zero=True)
        if out[name] > 1e12:
            raise ValueError(f"{name} must be at most 1e12 s, got {out[name]:g}")
    return out


def _recovery(policy: str, mtbf_s: float, t: dict[str, float], n_spares: int) -> Recovery:
    """:func:`resume_recovery` on checked inputs."""
    fresh_s = t["provision_s"] + t["health_check_s"]
    if policy == "manual restart":
        detect, replace, short = t["manual_detect_s"], t["provision_s"], 1.0
    elif policy == "auto-resume":
        detect, replace, short = t["auto_detect_s"], fresh_s, 1.0
    else:
        short = spare_shortfall_probability(mtbf_s, fresh_s, n_spares)
        detect, replace = t["auto_detect_s"], (1.0 - short) * t["swap_s"] + short * fresh_s
    return Recovery(policy, detect, replace, t["load_s"], t["compile_s"], short)


def goodput_vs_job_size(chip_mtbf_s: float, checkpoint_s: float, *, manual_detect_s: float,
                        auto_detect_s: float, swap_s: float, provision_s: float,
                        health_check_s: float, load_s: float, compile_s: float, n_spares: int = 0,
                        system: str = "trn2-ultraserver", max_domains: int = 512) -> pd.DataFrame:
    """Goodput of each recovery policy for jobs of one instance up to ``max_domains`` systems.

    For every size: job MTBF M = chip MTBF / chips (:func:`mtbf_vs_job_size`),
    restart R from :func:`resume_recovery`, the checkpoint interval at the exact
    optimum (:func:`optimal_interval_s`), and goodput = 1 − :func:`lost_fraction`.

    Returns
    -------
    pandas.DataFrame
        One row per (size, policy): ``n_chips``, ``label``, ``policy``, ``mtbf_s``,
        ``restart_s``, ``shortfall_probability``, ``interval_s``, ``goodput``.

    Examples
    --------
    >>> from trainium_lab.units import day
    >>> df = goodput_vs_job_size(2000 * day, 60, manual_detect_s=3600, auto_detect_s=60, swap_s=300,
    ...                          provision_s=1200, health_check_s=7200, load_s=60, compile_s=0,
    ...                          n_spares=2, max_domains=4)
    >>> last = df[df.n_chips == 256]   # manual, auto-resume without spares, with two spares
    >>> last.goodput.round(3).tolist()
    [0.98, 0.974, 0.986]
    """
    sizes = mtbf_vs_job_size(chip_mtbf_s, system, max_domains=max_domains)
    checkpoint_s = positive("checkpoint_s", checkpoint_s)
    t = _recovery_times(manual_detect_s=manual_detect_s, auto_detect_s=auto_detect_s,
                        swap_s=swap_s, provision_s=provision_s, health_check_s=health_check_s,
                        load_s=load_s, compile_s=compile_s)
    n_spares = integer("n_spares", n_spares, minimum=0, maximum=10_000)
    rows = []
    for n_chips, label, mtbf_s in zip(sizes["n_chips"].tolist(), sizes["label"].tolist(),
                                      sizes["mtbf_s"].tolist()):
        tau = optimal_interval_s(checkpoint_s, mtbf_s)
        for policy in RESUME_POLICIES:
            r = _recovery(policy, mtbf_s, t, n_spares)
            # 1 - lost_fraction: tau / E with E = (M + R)(exp((tau + delta)/M) - 1)
            segment = (mtbf_s + r.total_s) * math.expm1((tau + checkpoint_s) / mtbf_s) \
                if (tau + checkpoint_s) / mtbf_s < 700 else math.inf
            rows.append((int(n_chips), label, policy, mtbf_s, r.total_s,
                         r.shortfall_probability, tau, tau / segment))
    return pd.DataFrame(rows, columns=["n_chips", "label", "policy", "mtbf_s", "restart_s",
                                       "shortfall_probability", "interval_s", "goodput"])


# ------------------------------------------------------------------ traces to read

def _times(name: str, values, *, max_size: int = _MAX_EVENTS) -> list[float]:
    if isinstance(values, (str, bytes, bool)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of numbers, got {str(values)[:40]}")
    out = [positive(name, v, allow_zero=True) for v in values]
    if len(out) > max_size:
        raise ValueError(f"{name} may hold at most {max_size:,} values, got {len(out):,}")
    return out


def training_timeline(step_s: float, n_steps: int, *, checkpoint_every: int = 0,
                      checkpoint_s: float = 0.0, compile_at_steps=(), compile_s: float = 0.0,
                      fail_at_s=(), detect_s: float = 0.0, replace_s: float = 0.0,
                      load_s: float = 0.0, restart_compile_s: float = 0.0) -> pd.DataFrame:
    """What a synchronous training job does, second by second, until it finishes ``n_steps``.

    The job computes steps of ``step_s``. After every ``checkpoint_every`` steps it
    writes a checkpoint, blocking for ``checkpoint_s``. Before the steps in
    ``compile_at_steps`` (1-based step numbers: step 1 is the first) it meets a new
    graph and compiles for ``compile_s``, once (the cache then holds it). A failure at
    each wall-clock time in ``fail_at_s`` (during computing, writing or compiling)
    throws away the work since the last completed checkpoint; the job then waits
    ``detect_s`` (until the failure is noticed), ``replace_s`` (a node stands in),
    ``load_s`` (the checkpoint is read) and ``restart_compile_s`` (graphs the
    restarted job finds in no cache), and goes on from the checkpoint. Recovery
    itself does not fail, as in :func:`expected_segment_s`.

    Parameters
    ----------
    step_s : float
        Seconds per training step (> 0).
    n_steps : int
        Steps the job must complete (1 to 1,000,000).
    checkpoint_every : int
        Steps between checkpoints (0: none).
    checkpoint_s, compile_s, detect_s, replace_s, load_s, restart_compile_s : float
        Seconds (>= 0).
    compile_at_steps : sequence of int
        1-based step numbers whose first run compiles a new graph.
    fail_at_s : sequence of float
        Wall-clock times of failures, in seconds (>= 0).

    Returns
    -------
    pandas.DataFrame
        One row per segment: ``start_s``, ``end_s``, ``kind`` (:data:`TIMELINE_KINDS`;
        a ``"failure"`` row is an instant), ``step`` (the step computed, or the last step
        completed), ``attempt`` (0, then one more per restart), ``lost`` (work a
        failure threw away, including the segment it cut short) and ``cut`` (the
        segment a failure interrupted).

    References
    ----------
    The checkpoint/restart model of this module ([1]_, [2]_), played out as events.

    Examples
    --------
    >>> tl = training_timeline(10, 6, checkpoint_every=2, checkpoint_s=5, fail_at_s=[42],
    ...                        detect_s=3, load_s=2)
    >>> round(float(tl.end_s.max()), 1), int(tl.lost.sum()), sorted(set(tl.kind))
    (92.0, 2, ['checkpoint', 'compute', 'failure', 'load', 'wait'])
    """
    step_s = in_range("step_s", step_s, 0.0, 1e9, low_open=True)
    n_steps = integer("n_steps", n_steps, minimum=1, maximum=_MAX_STEPS)
    checkpoint_every = integer("checkpoint_every", checkpoint_every, minimum=0, maximum=_MAX_STEPS)
    secs = {}
    for name, value in (("checkpoint_s", checkpoint_s), ("compile_s", compile_s),
                        ("detect_s", detect_s), ("replace_s", replace_s), ("load_s", load_s),
                        ("restart_compile_s", restart_compile_s)):
        secs[name] = in_range(name, value, 0.0, 1e9)
    compile_steps = set()
    if isinstance(compile_at_steps, (str, bytes, bool)) or not hasattr(compile_at_steps, "__iter__"):
        raise ValueError(f"compile_at_steps must be a list of step numbers, got "
                         f"{str(compile_at_steps)[:40]}")
    for v in compile_at_steps:
        compile_steps.add(integer("compile_at_steps", v, minimum=1, maximum=_MAX_STEPS))
    fails = sorted(_times("fail_at_s", fail_at_s))
    if fails and fails[-1] > 1e12:
        raise ValueError(f"fail_at_s must be at most 1e12 s, got {fails[-1]:g}")
    rows: list[list] = []
    state = {"t": 0.0, "done": 0, "saved": 0, "attempt": 0, "fi": 0}
    compiled: set[int] = set()
    recovery = [(k, secs[n]) for k, n in (("wait", "detect_s"), ("replace", "replace_s"),
                                         ("load", "load_s"), ("compile", "restart_compile_s"))
                if secs[n] > 0]

    def run(kind: str, dur: float, step: int) -> bool:
        """Play one segment that a failure can cut; False if it was cut (and recover)."""
        t, fi = state["t"], state["fi"]
        if fi < len(fails) and fails[fi] < t + dur:
            fail_t = max(fails[fi], t)
            state["fi"] += 1
            if fail_t > t:
                rows.append([t, fail_t, kind, step, state["attempt"], True, True])
            rows.append([fail_t, fail_t, "failure", state["saved"], state["attempt"], False, False])
            for r in reversed(rows):  # the work since the last checkpoint is thrown away
                if r[4] != state["attempt"] or (r[2] == "checkpoint" and not r[6]):
                    break
                if r[2] in ("compute", "compile"):
                    r[5] = True
            state["attempt"] += 1
            state["done"] = state["saved"]
            t = fail_t
            for k, d in recovery:  # recovery itself does not fail
                rows.append([t, t + d, k, state["done"], state["attempt"], False, False])
                t += d
            state["t"] = t
            while state["fi"] < len(fails) and fails[state["fi"]] < t:
                state["fi"] += 1  # failures during recovery are not counted
            return False
        rows.append([t, t + dur, kind, step, state["attempt"], False, False])
        state["t"] = t + dur
        return True

    while state["done"] < n_steps:
        if len(rows) > 20 * _MAX_STEPS:
            raise ValueError("fail_at_s: failures come faster than the job can reach a "
                             "checkpoint; the timeline never ends")
        nxt = state["done"] + 1
        if nxt in compile_steps and nxt not in compiled and secs["compile_s"] > 0:
            if run("compile", secs["compile_s"], state["done"]):
                compiled.add(nxt)
            continue
        if not run("compute", step_s, nxt):
            continue
        state["done"] = nxt
        if checkpoint_every and nxt % checkpoint_every == 0 and nxt < n_steps:
            if secs["checkpoint_s"] == 0 or run("checkpoint", secs["checkpoint_s"], nxt):
                state["saved"] = nxt
    return pd.DataFrame(rows, columns=["start_s", "end_s", "kind", "step", "attempt", "lost",
                                       "cut"])


def timeline_log(timeline: pd.DataFrame) -> pd.DataFrame:
    """The lines a training log would print for a :func:`training_timeline`.

    ``"job started"`` when processes start (time 0, then after the wait and the
    replacement of each restart), ``"checkpoint loaded"``, ``"step done"`` (with
    the step time a learner sees: seconds since the previous step's line, or since
    the job started or loaded its checkpoint, so a blocking checkpoint or a compile
    shows up in the step after it), ``"checkpoint saved"`` and ``"failure"``.

    Returns
    -------
    pandas.DataFrame
        ``wall_s``, ``event`` (:data:`LOG_EVENTS`), ``step``, ``attempt``,
        ``step_time_s`` (NaN except on ``"step done"`` lines), in time order.

    Examples
    --------
    >>> tl = training_timeline(10, 4, checkpoint_every=2, checkpoint_s=5)
    >>> timeline_log(tl).query("event == 'step done'").step_time_s.tolist()
    [10.0, 10.0, 15.0, 10.0]
    """
    need = {"start_s", "end_s", "kind", "step", "attempt", "lost", "cut"}
    if not isinstance(timeline, pd.DataFrame) or not need <= set(timeline.columns):
        raise ValueError("timeline must be a DataFrame from training_timeline (columns start_s, "
                         "end_s, kind, step, attempt, lost, cut)")
    out = [(0.0, "job started", 0, 0)]
    started: set[int] = {0}
    for r in timeline.itertuples(index=False):
        a = int(r.attempt)
        if a not in started and r.kind not in ("wait", "replace"):
            out.append((float(r.start_s), "job started", int(r.step), a))
            started.add(a)
        if r.kind == "failure":
            out.append((float(r.start_s), "failure", int(r.step), a))
        elif r.kind == "load":
            out.append((float(r.end_s), "checkpoint loaded", int(r.step), a))
        elif r.cut:
            continue  # cut short by the failure: no line
        elif r.kind == "compute":
            out.append((float(r.end_s), "step done", int(r.step), a))
        elif r.kind == "checkpoint":
            out.append((float(r.end_s), "checkpoint saved", int(r.step), a))
    log = pd.DataFrame(out, columns=["wall_s", "event", "step", "attempt"])
    order = {e: i for i, e in enumerate(LOG_EVENTS)}
    log["_o"] = log["event"].map(order)
    log = log.sort_values(["wall_s", "attempt", "_o"], kind="stable").drop(columns="_o")
    log = log.reset_index(drop=True)
    times = np.full(len(log), np.nan)
    last: dict[int, float] = {}
    for i, (t, event, a) in enumerate(zip(log["wall_s"], log["event"], log["attempt"])):
        if event in ("job started", "checkpoint loaded"):
            last[a] = t
        elif event == "step done":
            times[i] = t - last.get(a, 0.0)
            last[a] = t
    log["step_time_s"] = times
    return log


def collective_trace(n_ranks: int, step_s: float, n_steps: int, *, comm_s: float,
                     cause: str = "none", at_step: int = 1, rank: int = 0,
                     timeout_s: float = 1800.0, slow_factor: float = 1.0) -> pd.DataFrame:
    """What every rank of a synchronous job does, step by step, when something goes wrong.

    Each step, every rank computes for ``step_s - comm_s`` seconds and then joins
    one collective (an all-reduce); a collective starts moving data only when every
    rank has joined, and takes ``comm_s``. So every rank waits for the slowest one.
    From step ``at_step`` on, rank ``rank`` does one of:

    * ``"device error"``: its device fails halfway through the step's compute and
      the process exits; the others join the collective and block until
      ``timeout_s`` after the first of them joined, when the job is torn down.
    * ``"mismatched collective"``: it issues a different collective (took another
      code path); nobody's collective can complete, and all block until the timeout.
    * ``"slow rank"``: it computes ``slow_factor`` times slower every step; every
      other rank waits for it in every collective. Nothing fails.

    Parameters
    ----------
    n_ranks : int
        Ranks (2 to 1024).
    step_s : float
        Seconds of one healthy step (> 0).
    n_steps : int
        Steps to draw (1 to 10,000); a hang ends the trace at ``at_step``.
    comm_s : float
        Seconds of the collective's data movement (0 <= comm_s < step_s).
    cause : {"none", "device error", "mismatched collective", "slow rank"}
    at_step : int
        1-based step where it starts (1 to n_steps).
    rank : int
        The rank concerned (0 to n_ranks - 1).
    timeout_s : float
        Collective timeout in seconds (> 0; an input: frameworks set their own).
    slow_factor : float
        How much slower the slow rank computes (1 to 100).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, segment): ``rank``, ``step``, ``start_s``, ``end_s``,
        ``state`` (:data:`RANK_STATES`).

    References
    ----------
    AWS Neuron documentation, "Collective communication" (every rank takes part in
    each collective); chapter 03.

    Examples
    --------
    >>> df = collective_trace(4, 10, 3, comm_s=2, cause="device error", at_step=2, rank=1,
    ...                       timeout_s=60)
    >>> sorted(df[df.step == 2].state.unique())
    ['blocked until timeout', 'compute', 'exited: device error']
    >>> float(df.end_s.max())
    78.0
    """
    n_ranks = integer("n_ranks", n_ranks, minimum=2, maximum=1024)
    step_s = in_range("step_s", step_s, 0.0, 1e9, low_open=True)
    n_steps = integer("n_steps", n_steps, minimum=1, maximum=10_000)
    comm_s = in_range("comm_s", comm_s, 0.0, step_s, high_open=True)
    cause = choice("cause", cause, HANG_CAUSES)
    at_step = integer("at_step", at_step, minimum=1, maximum=n_steps)
    rank = integer("rank", rank, minimum=0, maximum=n_ranks - 1)
    timeout_s = in_range("timeout_s", timeout_s, 0.0, 1e9, low_open=True)
    slow_factor = in_range("slow_factor", slow_factor, 1.0, 100.0)
    compute_s = step_s - comm_s
    rows = []
    t = 0.0
    for step in range(1, n_steps + 1):
        c = np.full(n_ranks, compute_s)
        if cause == "slow rank" and step >= at_step:
            c[rank] *= slow_factor
        arrive = t + c
        hang = cause in ("device error", "mismatched collective") and step == at_step
        if not hang:
            go = float(arrive.max())
            for r in range(n_ranks):
                rows.append((r, step, t, float(arrive[r]), "compute"))
                if go > arrive[r]:
                    rows.append((r, step, float(arrive[r]), go, "waiting for other ranks"))
                if comm_s > 0:
                    rows.append((r, step, go, go + comm_s, "collective transfer"))
            t = go + comm_s
            continue
        joined = [r for r in range(n_ranks) if not (cause == "device error" and r == rank)]
        end = float(min(arrive[r] for r in joined)) + timeout_s
        for r in range(n_ranks):
            if cause == "device error" and r == rank:
                died = t + c[r] / 2.0
                rows.append((r, step, t, died, "compute"))
                rows.append((r, step, died, end, "exited: device error"))
                continue
            rows.append((r, step, t, float(arrive[r]), "compute"))
            state = ("blocked in another collective" if cause == "mismatched collective"
                     and r == rank else "blocked until timeout")
            rows.append((r, step, float(arrive[r]), end, state))
        break
    return pd.DataFrame(rows, columns=["rank", "step", "start_s", "end_s", "state"])
