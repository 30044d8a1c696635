"""Chapter 07 widget: bucket boundaries for a length distribution, optimal against powers of two.

The callback collects control values, calls ``trainium_lab.compilation`` and a chart
builder from ``trainium_lab.charts.compilation``; nothing else.
"""

from __future__ import annotations

import functools

import ipywidgets as W
import pandas as pd

from trainium_lab import compilation as comp
from trainium_lab.charts.compilation import bucketing_chart
from trainium_lab.units import MiB, minute
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["bucketing_explorer", "DISTRIBUTIONS", "MAX_BUCKETS", "SYNTHETIC_SAMPLES"]

#: most buckets the explorer offers
MAX_BUCKETS = 16
#: size of the seeded synthetic distribution
SYNTHETIC_SAMPLES = 100_000
#: dropdown label -> distribution key
DISTRIBUTIONS = {
    "synthetic (seeded log-normal, 100k, max 2048)": "synthetic",
    "Wikipedia, BERT pre-training (max 512)": "wikipedia-bert-512",
    "SQuAD 1.1 (max 384)": "squad-1.1-384",
}


@functools.lru_cache(maxsize=8)
def _distribution(key: str):
    """(lengths, counts, length shares, padding table for 1..MAX_BUCKETS) of one distribution."""
    if key == "synthetic":
        values = comp.synthetic_lengths(SYNTHETIC_SAMPLES, seed=0)
        counts = None
    else:
        h = comp.length_histogram(key)
        values, counts = h["n_tokens"].to_numpy(), h["n_sequences"].to_numpy()
    shares = comp.length_shares(values, counts, n_bins=128)
    table = comp.bucket_tradeoff(values, MAX_BUCKETS, counts=counts, compile_s_per_neff=0.0,
                                 neff_bytes=0.0)
    return values, counts, shares, table


@functools.lru_cache(maxsize=64)
def _view(key: str, n_buckets: int):
    _, _, shares, table = _distribution(key)
    rows = table[table.n_buckets == n_buckets].set_index("strategy")
    buckets = pd.DataFrame([(s, int(b)) for s, text in zip(rows.index, rows["buckets"])
                            for b in text.split(", ")], columns=["strategy", "bucket"])
    return bucketing_chart(shares, buckets, table, n_buckets), rows


@benchmarked(("n_buckets", 6), ("distribution", "wikipedia-bert-512"), ("compile_min", 45.0),
             ("neff_mib", 512.0))
def bucketing_explorer(distribution: str = "synthetic", n_buckets: int = 4,
                       compile_min: float = 20.0, neff_mib: float = 256.0) -> Explorer:
    """A length distribution against the number of buckets: padding, compiles and memory.

    ``compile_min`` (minutes to compile one bucket's NEFF) and ``neff_mib`` (device
    memory one loaded NEFF keeps) are assumptions: no public source gives them for a
    given model. The padding comes from the data alone.
    """
    for key in DISTRIBUTIONS.values():  # load every distribution once, up front
        _distribution(key)
    controls = {
        "distribution": W.Dropdown(options=list(DISTRIBUTIONS.items()), value=distribution,
                                   description="lengths"),
        "n_buckets": W.IntSlider(value=n_buckets, min=1, max=MAX_BUCKETS, description="buckets"),
        "compile_min": W.FloatText(value=compile_min, description="compile/NEFF (min)", step=5.0),
        "neff_mib": W.FloatText(value=neff_mib, description="MiB per NEFF", step=64.0),
    }

    def compute(distribution: str, n_buckets: int, compile_min: float, neff_mib: float):
        values, counts, _, _ = _distribution(distribution)
        chart, rows = _view(distribution, int(n_buckets))
        costs = {s: comp.bucket_set_cost(values, [int(b) for b in rows.buckets[s].split(", ")],
                                         counts=counts, compile_s_per_neff=compile_min * minute,
                                         neff_bytes=neff_mib * MiB)
                 for s in rows.index}
        return {"chart": chart, "costs": costs}

    def describe(result) -> str:
        lines = []
        for strategy, c in result["costs"].items():
            lines.append(
                f"<b>{strategy}</b> {list(c.buckets)}: padding <b>{c.padding_fraction:.1%}</b>, "
                f"{c.n_neffs} NEFFs → {c.compile_s / minute:,.0f} min of compiling, "
                f"{c.loaded_bytes / MiB:,.0f} MiB loaded")
        return "<br>".join(lines) + ("<br><i>compile time and MiB per NEFF are assumptions "
                                      "you set; padding comes from the data.</i>")

    return Explorer(controls, compute, lambda result: result["chart"], describe, columns=2)
