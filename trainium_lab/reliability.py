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

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab._validate import choice, integer, positive

__all__ = [
    "job_mtbf_s", "layout_mtbf_s", "domains_for_chips", "blast_radius",
    "young_interval_s", "daly_interval_s", "optimal_interval_s",
    "checkpoint_cost_s", "expected_segment_s", "lost_fraction", "lost_time_breakdown",
    "lost_time_curve", "interval_markers",
    "MonteCarloResult", "simulate_runs", "simulated_lost_fraction",
    "Llama3Summary", "llama3_interruptions", "llama3_summary", "mtbf_vs_job_size",
    "FAILURE_LEVELS", "STATUSES", "FAILURE_MODES", "failure_modes",
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
    n_domains = domains_for_chips(n_chips, system)
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


def blast_radius(failed: str = "chip", system: str = "trn2-ultraserver", *, chip: int = 0,
                 replacement: str = "system") -> pd.DataFrame:
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
    pandas.DataFrame
        One row per chip: ``chip``, ``instance``, ``x``, ``y`` (position in the
        instance's 2D torus, or a row for non-square instances), ``status``.
        ``attrs``: ``n_failed``, ``n_replaced``, ``n_stalled``, ``n_stopped``.

    Examples
    --------
    >>> df = blast_radius("chip", replacement="instance")
    >>> df.attrs["n_failed"], df.attrs["n_replaced"], df.attrs["n_stalled"], df.attrs["n_stopped"]
    (1, 15, 48, 64)
    >>> blast_radius("instance", "trn2.48xlarge").attrs["n_stopped"]
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
    df.attrs.update(n_failed=int(is_failed.sum()), n_replaced=int((in_unit & ~is_failed).sum()),
                    n_stalled=int((~in_unit & ~is_failed).sum()), n_stopped=int(spec.n_chips))
    return df


# ------------------------------------------------------------ checkpoint interval

def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum checkpoint interval, sqrt(2 δ M).

    Minimises the first-order lost fraction δ/τ + τ/(2M) (checkpoint overhead
    plus, on average, half an interval of rework per failure). Valid for
    checkpoint costs much smaller than the MTBF (δ << M); it ignores failures
    during checkpoints and restarts, and overestimates the interval as δ/M grows
    (by about δ when δ << M).

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

    Parameters
    ----------
    checkpoint_s : float
        Blocking checkpoint time δ in seconds (> 0).
    mtbf_s : float
        Job-level MTBF M in seconds (> 0).

    Returns
    -------
    float
        Compute time between checkpoints, in seconds.

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
        "interval_s": wide["interval_s"], "interval_min": wide["interval_s"] / 60.0,
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
        rows.append((method, tau, tau / 60.0, lost_fraction(tau, checkpoint_s, mtbf_s, restart_s)))
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
            "interval_min": self.interval_s / 60.0, "runs": self.n_runs,
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
        rows.append((float(tau), tau / 60.0, mc.lost_fraction, mc.lost_fraction - half,
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
    from trainium_lab.units import day

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
    df["mtbf_h"] = df["mtbf_s"] / 3600.0
    return df


# ----------------------------------------------------- operational failure modes

#: (failure mode, symptom, cause, fix, source): the source is a public page that explains the
#: mechanism, or "rule of thumb" with the chapter whose model shows why
FAILURE_MODES: tuple[tuple[str, str, str, str, str], ...] = (
    ("Hardware failure mid-run",
     "One rank dies or reports a device error; every other rank blocks in its next collective "
     "until a timeout, then the whole job exits.",
     "Synchronous training needs every rank at every collective: nothing continues with a rank "
     "missing.",
     "Health checks and automatic node replacement, then restart from the latest checkpoint; "
     "choose the checkpoint interval from the measured MTBF.",
     "AWS Neuron docs, Collective communication (every rank takes part in each collective); "
     "Llama Team 2024, arXiv:2407.21783, section 3.3.4 (interruptions and restarts)"),
    ("Recompilation from shape changes",
     "Step time jumps every few steps; compiler messages or cache misses keep appearing "
     "mid-run.",
     "Graphs are compiled for exact shapes: a new sequence length or a short last batch is a "
     "new graph to compile.",
     "Pad to a few fixed length buckets; drop or pad the last partial batch; avoid .item() and "
     "value-dependent Python branches inside the step.",
     "AWS Neuron docs, PyTorch NeuronX neuron_parallel_compile CLI (a traced graph that "
     "differs from earlier steps is compiled again)"),
    ("Compile on the first step",
     "The first step takes many minutes and looks like a hang.",
     "Ahead-of-time compilation of a cold cache, or a cache miss because the SDK version, "
     "compiler flags or LNC differ from the cached build.",
     "Warm a shared compile cache (NEURON_COMPILE_CACHE_URL on S3) with neuron_parallel_compile "
     "or a short run; key it by SDK version, flags and LNC.",
     "AWS Neuron docs, Neuron Persistent Cache; PyTorch NeuronX neuron_parallel_compile CLI "
     "(pre-compiles into the cache on disk or in S3)"),
    ("Out of device memory at load",
     "The job fails while loading, before the first step.",
     "Weights, optimizer state and activations (plus buffers of every loaded NEFF) exceed the "
     "HBM available per core.",
     "Shard more, recompute activations, shrink the micro-batch; plan activation headroom first.",
     "rule of thumb: chapters 04 and 05 size state and activations against HBM"),
    ("Collective hang from diverging graphs",
     "All ranks stall inside a collective with no error until a timeout.",
     "Ranks took different code paths, compiled different graphs, and issue collectives that do "
     "not match.",
     "Keep control flow identical on every rank; no rank-dependent or data-dependent branches "
     "in the step.",
     "rule of thumb: a collective completes only when every rank issues the matching one "
     "(chapter 03)"),
    ("LNC mismatch",
     "A compiled graph fails to load, or only half the NeuronCores do work.",
     "The graph was compiled for one logical NeuronCore setting (--logical-nc-config) and run "
     "with another (NEURON_LOGICAL_NC_CONFIG).",
     "Set both explicitly in the job spec and in the compile-cache key.",
     "AWS Neuron docs, Logical NeuronCore configuration (the compiler's and the runtime's "
     "settings must agree)"),
    ("SDK version mismatch",
     "The runtime refuses to load a NEFF, or a container fails against the host driver.",
     "A runtime older than the compiler that built the NEFF, or a container SDK that does not "
     "match the driver on the host.",
     "Pin one Neuron SDK release and upgrade driver, runtime, compiler and framework together.",
     "rule of thumb: pin one SDK release"),
    ("TP across the ring by accident",
     "Step time is higher than planned, with no error at all.",
     "The process grid orders ranks instance-first, so tensor-parallel groups cross the ring "
     "between instances at a quarter of the bandwidth inside the 4x4 torus.",
     "Print the rank-to-chip map at start-up and check that each TP group sits in one instance.",
     "AWS Neuron docs, Amazon EC2 Trn2 Architecture (the ring between instances is slower than "
     "the torus inside one); chapter 03"),
    ("Partial UltraServer",
     "Collectives are slower than expected or fail at start-up, often after a replacement.",
     "The four instances were scheduled as independent nodes, or one was replaced by an "
     "instance outside the UltraServer: the ring links between instances are missing.",
     "Schedule and replace the four instances of an UltraServer as one unit.",
     "AWS Neuron docs, Amazon EC2 Trn2 Architecture (an UltraServer is four trn2u.48xlarge "
     "instances joined by NeuronLink); rule of thumb for scheduling"),
    ("EFA saturation",
     "NeuronCores sit idle at the end of every step.",
     "The data-parallel gradient reduction over EFA does not overlap the backward pass.",
     "Profile; bucket the gradients and overlap their reduction with compute; shard the "
     "optimizer state.",
     "rule of thumb: chapter 05's model of the exposed data-parallel traffic"),
    ("Untested restart",
     "The first real failure costs hours instead of minutes.",
     "The restart path was never exercised: checkpoints cannot be resharded onto a new domain, "
     "or auto-resume is misconfigured.",
     "Rehearse a full-domain restart and a restore before the long run; automate it.",
     "rule of thumb: chapter 06's lost-time model counts the restart on every failure"),
)


def failure_modes(query: str = "") -> pd.DataFrame:
    """The operational failure modes as a table, optionally filtered by a search text.

    Parameters
    ----------
    query : str
        Case-insensitive words; a row is kept if every word appears somewhere in it.

    Examples
    --------
    >>> len(failure_modes()) >= 10
    True
    >>> list(failure_modes("lnc load").failure_mode)
    ['LNC mismatch']
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be text, got {type(query).__name__}")
    df = pd.DataFrame(FAILURE_MODES, columns=["failure_mode", "symptom", "cause", "fix", "source"])
    words = query.lower().split()
    if words:
        text = df.apply(lambda r: " ".join(r.values).lower(), axis=1)
        keep = np.array([all(w in s for w in words) for s in text], dtype=bool)
        df = df[keep].reset_index(drop=True)
    return df
