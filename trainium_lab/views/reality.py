"""Tables and sentences for "how close do real runs get" (chapters 03, 04, 05, 09 and 11).

Built from :func:`trainium_lab.reality.compare` and :func:`trainium_lab.reality.summary`;
numbers are rounded here to what a reader compares (three significant figures), so a stored
notebook output does not depend on the last bits of floating point.
"""

from __future__ import annotations

import math

import pandas as pd

from trainium_lab import reality
from trainium_lab.units import format_seconds

__all__ = ["compare_table", "summary_table", "summary_line", "nccom_sweep", "unit_readings", "latency_floors",
           "SET_LABELS"]

SET_LABELS = {
    "trn1_training": "Trn1 training table",
    "nxdi_trn2_tutorials": "NxD Inference Trn2 tutorials",
    "nccom_test_guide": "NCCOM-TEST guide",
    "vllm_eagle3_acceptance": "EAGLE3 acceptance",
}


def _fmt(value: float, kind: str) -> str:
    if value != value:
        return "—"
    if kind == "time":
        return format_seconds(value)
    if kind == "throughput":
        return f"{value:,.0f} tokens/s"
    return f"{100 * value:.1f} %"


def _sig(x: float) -> float:
    return x if x != x or x == 0 else round(x, 2 - int(math.floor(math.log10(abs(x)))))


def compare_table(sets=None, *, modelled_only: bool = True) -> pd.DataFrame:
    """Each measurement with its bound and expectation, formatted for reading.

    Columns: ``measurement``, ``set``, ``measured``, ``bound``, ``expected``,
    ``expected ÷ measured``, ``bound ÷ measured``, ``bound holds``.

    Examples
    --------
    >>> t = compare_table(["trn1_training"])
    >>> list(t.measurement)
    ['trn1-train-llama31-8b', 'trn1-train-llama31-70b']
    """
    c = reality.compare()
    if sets is not None:
        c = c[c.set.isin(list(sets))]
    if modelled_only:
        c = c[c.modelled]
    return pd.DataFrame({
        "measurement": c.measurement_id.to_list(),
        "set": [SET_LABELS.get(s, s) for s in c.set],
        "measured": [_fmt(v, k) for v, k in zip(c.measured, c.kind)],
        "bound": [_fmt(v, k) for v, k in zip(c.bound, c.kind)],
        "expected": [_fmt(v, k) for v, k in zip(c.expected, c.kind)],
        "expected ÷ measured": [_sig(v) for v in c.expected_over_measured],
        "bound ÷ measured": [_sig(v) for v in c.bound_over_measured],
        "bound holds": c.bound_holds.to_list(),
    })


#: the columns of :func:`summary_table` that quote errors: out of sample first (the prediction),
#: then the fit (in sample), each as ``(column, summary() field)``
SUMMARY_ERROR_COLUMNS = (("median, out of sample (%)", "median_out_of_sample_error"),
                         ("largest, out of sample (%)", "max_out_of_sample_error"),
                         ("median, fit (%)", "median_abs_error"),
                         ("largest, fit (%)", "max_abs_error"))


def summary_table() -> pd.DataFrame:
    """Per set and overall: rows, median and largest ``|expected/measured − 1|`` (in %) out of sample
    (each model, row or position left out of the fit: the prediction) and in sample (the fit),
    and whether every bound held."""
    s = reality.summary()
    return pd.DataFrame({
        "set": [SET_LABELS.get(k, "all calibration sets" if k == "all" else k) for k in s.set],
        "rows": s.n_rows.to_list(),
        **{col: [round(100 * v, 1) for v in s[field]] for col, field in SUMMARY_ERROR_COLUMNS},
        "no bound beaten": s.bounds_hold.to_list(),
    })


def summary_line() -> str:
    """One sentence with the overall median and largest error (out of sample, fit, whole set left out)
    and whether any bound is beaten.

    Examples
    --------
    >>> summary_line().startswith("Over ")
    True
    """
    s = reality.summary().set_index("set")
    c = reality.compare()
    allrow = s.loc["all"]
    worst = c[c.modelled & (c.judged == "tolerance")].sort_values("abs_error").iloc[-1]
    beaten = int((~c.bound_holds).sum())
    return (f"Over {int(allrow.n_rows)} published measurements, out of sample (each model, row or position "
            f"left out of the fit): median |expected ÷ measured − 1| = {100 * allrow.median_out_of_sample_error:.1f} %, "
            f"largest {100 * allrow.max_out_of_sample_error:.1f} %; fit (in sample): "
            f"{100 * allrow.median_abs_error:.1f} %, largest {100 * allrow.max_abs_error:.1f} % "
            f"({worst.measurement_id}); whole set left out (its parameters at the middle of their documented "
            f"ranges): {100 * allrow.median_without_set_error:.1f} %, largest {100 * allrow.max_without_set_error:.1f} %; "
            f"{'no bound beaten' if beaten == 0 else f'{beaten} bounds beaten'}; "
            f"{int((~c.modelled).sum())} rows whose configuration the source does not state are not modelled.")


def nccom_sweep(run: str) -> pd.DataFrame:
    """One NCCOM-TEST run (``measurement_id`` prefix) as lines: measured, expected, bound (ms).

    Columns ``size_bytes``, ``time_ms`` (four significant figures) and ``series``, for
    :func:`trainium_lab.charts.topology.size_sweep_chart`.

    Examples
    --------
    >>> sorted(set(nccom_sweep("nccom-allr-64r-2i-").series))[:1]
    ['bound (published rates, 1 µs per step)']
    """
    c = reality.compare()
    m = reality.measurements().set_index("measurement_id")
    c = c[c.measurement_id.str.startswith(run) & c.modelled]
    size = m.loc[c.measurement_id, "size_bytes"].astype(float).to_numpy()
    rows = []
    for label, col in [("measured (NCCOM-TEST guide)", "measured"), ("expected (fitted on the guide)", "expected"),
                       ("bound (published rates, 1 µs per step)", "bound")]:
        rows.append(pd.DataFrame({"size_bytes": size, "time_ms": [_sig4(v * 1e3) for v in c[col]], "series": label}))
    return pd.concat(rows, ignore_index=True)


def _sig4(x: float) -> float:
    return x if x == 0 else round(x, 3 - int(math.floor(math.log10(abs(x)))))


def unit_readings() -> pd.DataFrame:
    """The largest size of each NCCOM-TEST run: size ÷ time in GiB/s and in GB/s beside what it printed.

    Examples
    --------
    >>> set(unit_readings().supports) == {"GiB/s", "decimal GB/s"}
    True
    """
    m = reality.measurements()
    m = m[m.set == "nccom_test_guide"].copy()
    m["run"] = m.measurement_id.str.rsplit("-", n=1).str[0]
    m["size"] = m.size_bytes.astype(float)
    last = m.sort_values("size").groupby("run", sort=False).tail(1).sort_index()
    t = last.value.astype(float) * 1e-6
    return pd.DataFrame({
        "run": last.run.to_list(), "time column": ["time:avg(us)" if p == "mean" else "time(us)" for p in last.percentile],
        "size (B)": last["size"].astype(int).to_list(), "time (µs)": last.value.to_list(),
        "size ÷ time (GiB/s)": (last["size"] / t / 2**30).round(2).to_list(),
        "size ÷ time (GB/s)": (last["size"] / t / 1e9).round(2).to_list(),
        "printed algbw": [f"{v:.2f}" for v in last.printed_algbw], "supports": last.unit_reading.to_list()})


#: the guide's latency floors, each read under the algorithm(s) that could have produced it:
#: (label, measurement_id prefix, largest size in the floor (B), algorithm, NeuronLink steps, EFA steps)
_FLOORS = (
    ("2 ranks, one instance, up to 64 KiB", "nccom-allr-2r-", 65536, "ring", 2, 0),
    ("32-rank all-gather, one instance, up to 64 KiB", "nccom-allg-32r-", 65536, "ring", 31, 0),
    ("64 ranks on two instances, up to 128 B", "nccom-allr-64r-2i-", 128, "hierarchical", 62, 2),
    ("64 ranks on two instances, up to 128 B", "nccom-allr-64r-2i-", 128, "flat ring", 0, 126),
    ("64 ranks on two instances, 64 KiB to 8 MiB", "nccom-allr-64r-2i-", 8388608, "hierarchical", 62, 2),
    ("64 ranks on two instances, 64 KiB to 8 MiB", "nccom-allr-64r-2i-", 8388608, "flat ring", 0, 126),
)


def latency_floors() -> pd.DataFrame:
    """Read each latency floor of the NCCOM-TEST guide as launch + steps × per-step latency.

    For each floor (the median time of the rows it spans) and an algorithm that could have run it,
    the per-step latency that algorithm implies: ``(floor − launch − NeuronLink steps × α) /
    (EFA steps)`` (``α``, the launch: the calibrated values), or, inside one instance,
    ``(floor − launch) / steps``. A flat ring's steps are each bounded by their slowest hop, so
    they count as EFA steps. Compare with AWS's figures: 1-2 µs per NeuronLink hop, ~15 µs per EFA
    hop (``data/calibration.csv``, sourced rows).

    Examples
    --------
    >>> t = latency_floors()
    >>> list(t.columns)[:3]
    ['floor', 'algorithm', 'measured (µs)']
    """
    m = reality.measurements()
    m = m[m.set == "nccom_test_guide"]
    t0, a = reality.parameter("nccom_launch_s"), reality.parameter("hop_latency_s")
    rows = []
    for label, prefix, top, alg, nl, efa in _FLOORS:
        g = m[m.measurement_id.str.fullmatch(prefix + r"\d+") & (m.size_bytes.astype(float) <= top)]
        if "64 KiB to" in label:
            g = g[g.size_bytes.astype(float) >= 65536]
        floor = float(g.value.astype(float).median()) * 1e-6
        per_step = (floor - t0 - nl * a) / efa if efa else (floor - t0) / nl
        rows.append({"floor": label, "algorithm": alg, "measured (µs)": _sig(floor * 1e6),
                     "NeuronLink steps": nl, "EFA-bounded steps": efa,
                     "implied µs per step": _sig(per_step * 1e6),
                     "step over": "EFA" if efa else "NeuronLink"})
    return pd.DataFrame(rows)


def latency_floor_parts() -> pd.DataFrame:
    """Each floor of :func:`latency_floors` against what AWS's documented hops give for it:
    the fitted tool launch plus steps × per-step latency, one tidy row per part, in µs.

    The parts are the launch (``nccom_launch_s``, fitted), the NeuronLink steps at AWS's upper
    1-2 µs per hop (``hop_latency_s``) and the EFA-bounded steps at AWS's ~15 µs per EFA hop
    (``efa_hop_latency_s``); ``measured_us`` repeats the floor on every row of its bar.

    Examples
    --------
    >>> p = latency_floor_parts()
    >>> sorted(p.part.unique())
    ['EFA-bounded steps × 15 µs', 'NeuronLink steps × 2 µs', 'launch (fitted)']
    """
    t0 = reality.parameter("nccom_launch_s")
    a_nl, a_efa = reality.parameter("hop_latency_s"), reality.parameter("efa_hop_latency_s")
    rows = []
    for r in latency_floors().itertuples(index=False):
        bar = f"{r.floor} · {r.algorithm}"
        nl, efa = r[3], r[4]  # NeuronLink steps, EFA-bounded steps
        for part, us_ in (("launch (fitted)", t0 * 1e6),
                          (f"NeuronLink steps × {a_nl * 1e6:g} µs", nl * a_nl * 1e6),
                          (f"EFA-bounded steps × {a_efa * 1e6:g} µs", efa * a_efa * 1e6)):
            rows.append({"bar": bar, "part": part, "us": round(us_, 1), "steps": nl if "NeuronLink" in part else
                         (efa if "EFA" in part else 0), "measured_us": r[2], "implied_us_per_step": r[5]})
    return pd.DataFrame(rows)
