"""Charts for chapter 09 (serving). Encodings only: every number comes from
:mod:`trainium_lab.serving`. Prefill and decode on the roofline use chapter 01's
:func:`trainium_lab.charts.hardware.roofline_chart`."""

from __future__ import annotations

import functools

import altair as alt
import pandas as pd
from altair.utils.schemapi import debug_mode

from trainium_lab.charts.base import HEIGHT, PALETTE, WIDTH, TemplateLayerChart, described, inline_rows
from trainium_lab.charts.layouts import panel_bars_chart

__all__ = ["serving_panel_chart", "kv_growth_chart",
           "batching_chart", "speculation_chart", "speculation_histogram_chart", "chips_chart",
           "bucket_chart"]

_PARTS = ["weights", "KV cache", "NEFFs (assumed)", "runtime: micro-code + reserve"]
_PART_COLOURS = [PALETTE[0], PALETTE[1], PALETTE[6], PALETTE[9]]
_TIME = ["read weights", "read KV cache", "compute", "TP all-reduces"]
_TIME_COLOURS = [PALETTE[0], PALETTE[1], "#1a9641", PALETTE[2]]
_PANEL_DOMAIN = _PARTS + ["HBM"] + _TIME
_PANEL_COLOURS = _PART_COLOURS + ["#333333"] + _TIME_COLOURS


@described(
    'One serving setup at a glance: memory per logical core and per chip stacked by component '
    'beside a bar for the HBM, and the parts of a decode step: HBM traffic for weights and KV '
    'cache, compute, and all-reduces.')
def serving_panel_chart(memory: pd.DataFrame, hbm: pd.DataFrame, times: pd.DataFrame, *,
                        width: int = WIDTH) -> alt.Chart:
    """One serving setup at a glance, as a single chart (fast to redraw): memory per logical
    core and per chip stacked by component beside a bar for the HBM, and the parts of a decode
    step (HBM traffic stacked as weights + KV, compute, all-reduces).

    A step takes ``max(HBM traffic, compute) + all-reduces``.

    Parameters
    ----------
    memory : DataFrame
        ``Capacity.table()``: ``where``, ``component``, ``gib``.
    hbm : DataFrame
        ``where``, ``hbm_gib``.
    times : DataFrame
        ``part`` (read weights, read KV cache, compute, TP all-reduces) and ``ms``.
    """
    rows = []
    hbm_of = dict(zip(hbm["where"].tolist(), hbm["hbm_gib"].tolist()))
    mem = list(zip(memory["where"].tolist(), memory["component"].tolist(), memory["gib"].tolist()))
    for where in ("per logical core", "per chip"):
        panel = f"memory {where} (GiB)"
        part = [(comp, gib) for w, comp, gib in mem if w == where]
        for i, (comp, gib) in enumerate(part):
            rows.append((panel, "this setup", comp, gib, i))
        rows.append((panel, "HBM", "HBM", hbm_of[where], 0))
    step = "decode step (ms)"
    bar = {"read weights": "HBM traffic", "read KV cache": "HBM traffic", "compute": "compute",
           "TP all-reduces": "TP all-reduces"}
    for i, (part, ms) in enumerate(zip(times["part"].tolist(), times["ms"].tolist())):
        rows.append((step, bar[part], part, ms, i))
    records = [{"panel": p, "bar": b, "part": q, "value": round(float(v), 4), "order": o}
               for p, b, q, v, o in rows]
    panels = [f"memory {w} (GiB)" for w in ("per logical core", "per chip")] + [step]
    return panel_bars_chart(records, _PANEL_DOMAIN, _PANEL_COLOURS, panels, width=width, step=20,
                            legend_columns=1)


@described(
    'Log-log lines of the KV cache in GiB against the context length, one per batch size, '
    'with a rule at the HBM: the cache grows in proportion to context and batch until it no '
    'longer fits.')
def kv_growth_chart(df: pd.DataFrame, hbm_gib: float, *, hbm_label: str = "HBM of one chip",
                    title: str = "KV cache against context length") -> alt.LayerChart:
    """Log-log lines of KV GiB against context, one per batch, with an HBM rule.

    ``df`` is ``serving.kv_growth_table(...)`` (``context_len``, ``batch``, ``kv_gib``).
    """
    d = df[["context_len", "batch", "kv_gib"]].copy()
    d["kv_gib"] = d["kv_gib"].round(4)
    d["batch"] = "batch " + d["batch"].astype(str)
    rule = pd.DataFrame({"hbm_gib": [round(float(hbm_gib), 3)], "label": [hbm_label]})
    with debug_mode(False):
        lines = alt.Chart(inline_rows(d)).mark_line(point=True).encode(
            x=alt.X("context_len:Q", scale=alt.Scale(type="log", base=2), title="context (tokens, log scale)"),
            y=alt.Y("kv_gib:Q", scale=alt.Scale(type="log"), title="KV cache (GiB, log scale)"),
            color=alt.Color("batch:N", sort=None, title=None),
            tooltip=[alt.Tooltip("batch:N"), alt.Tooltip("context_len:Q", format=","),
                     alt.Tooltip("kv_gib:Q", format=",.2f", title="GiB")])
        hbm = alt.Chart(inline_rows(rule)).mark_rule(color="black", strokeDash=[5, 3]).encode(
            y=alt.Y("hbm_gib:Q"), tooltip=[alt.Tooltip("label:N"), alt.Tooltip("hbm_gib:Q", format=",.0f")])
        text = alt.Chart(inline_rows(rule)).mark_text(align="left", dy=-7, x=5, fontSize=11).encode(
            y=alt.Y("hbm_gib:Q"), text=alt.Text("label:N"))
        return alt.layer(lines, hbm, text, title=title, width=WIDTH, height=HEIGHT)


def _thinned_labels(labels: pd.Series, x: pd.Series, y: pd.Series, *, min_px: float = 16.0) -> pd.Series:
    """Point labels with those that would touch an earlier kept one blanked (no overlapping text).

    Positions are estimated on linear scales from zero to the data's maximum over the chart's
    ``WIDTH`` × ``HEIGHT`` (Vega's nice domains only spread points further apart), in data order."""
    sx = WIDTH / max(float(x.max()), 1e-300)
    sy = HEIGHT / max(float(y.max()), 1e-300)
    kept: list[tuple[float, float]] = []
    out = []
    for lab, a, b in zip(labels, x, y):
        px, py = float(a) * sx, float(b) * sy
        if all(abs(px - qx) >= min_px or abs(py - qy) >= min_px for qx, qy in kept):
            kept.append((px, py))
            out.append(lab)
        else:
            out.append("")
    return pd.Series(out, index=labels.index)


@described(
    'Output tokens per second per chip against the time per output token, one point per '
    'concurrency: more concurrent requests raise throughput and slow each token.')
def batching_chart(df: pd.DataFrame, *, title: str = "Continuous batching: throughput against latency") -> alt.LayerChart:
    """Output tokens/s per chip against time per output token, one point per concurrency.

    ``df`` is ``serving.batching_curve(...)`` (``concurrency``, ``tpot_ms``,
    ``tokens_per_s_per_chip``, ``fits``).
    """
    d = df[["concurrency", "tpot_ms", "tokens_per_s_per_chip", "fits"]].copy()
    d["tpot_ms"] = d["tpot_ms"].round(3)
    d["tokens_per_s_per_chip"] = d["tokens_per_s_per_chip"].round(1)
    d["fits"] = d["fits"].map({True: "fits in HBM", False: "does not fit"})
    d["label"] = _thinned_labels(d["concurrency"].astype(str), d["tpot_ms"], d["tokens_per_s_per_chip"])
    with debug_mode(False):
        x = alt.X("tpot_ms:Q", title="time per output token (ms)")
        y = alt.Y("tokens_per_s_per_chip:Q", title="output tokens/s per chip")
        line = alt.Chart().mark_line(color="#888").encode(x=x, y=y, order=alt.Order("concurrency:Q"))
        pts = alt.Chart().mark_point(filled=True, size=70).encode(
            x=x, y=y, color=alt.Color("fits:N", scale=alt.Scale(domain=["fits in HBM", "does not fit"],
                                                               range=[PALETTE[0], PALETTE[2]]), title=None),
            tooltip=[alt.Tooltip("concurrency:Q"), alt.Tooltip("tpot_ms:Q", format=",.2f"),
                     alt.Tooltip("tokens_per_s_per_chip:Q", format=",.0f")])
        text = alt.Chart().mark_text(align="left", dx=6, dy=-6, fontSize=11).encode(
            x=x, y=y, text=alt.Text("label:N"))
        return alt.layer(line, pts, text, data=inline_rows(d), title=title, width=WIDTH, height=HEIGHT)


_SPEC_SERIES = ["walltime speed-up (Thm 3.8)", "arithmetic done (Thm 3.11)"]


@functools.lru_cache(maxsize=4)
def _speculation_template(title: str) -> TemplateLayerChart:
    """The speculation chart's layers with named (empty) data sets, built once (see
    :class:`trainium_lab.charts.reliability.TemplateLayerChart`): a widget update only swaps
    the data."""
    x = alt.X("k:Q", title="speculation length k (tokens drafted per pass)")
    lines = alt.Chart(alt.NamedData("factors")).mark_line(point=True).encode(
        x=x, y=alt.Y("factor:Q", title="factor against plain decoding"),
        color=alt.Color("what:N", scale=alt.Scale(domain=_SPEC_SERIES, range=[PALETTE[0], PALETTE[1]]),
                        title=None),
        tooltip=[alt.Tooltip("k:Q"), alt.Tooltip("what:N"), alt.Tooltip("factor:Q", format=".3f")])
    chosen = alt.Chart(alt.NamedData("chosen")).mark_rule(color="black", strokeDash=[4, 3]).encode(x=x)
    one = alt.Chart(alt.NamedData("chosen")).mark_rule(color="#888").encode(y=alt.YDatum(1.0))
    # each rule says what it is: the chosen k at the foot of its line (the legend sits at the
    # top right), 1× at the right end of its
    chosen_label = alt.Chart(alt.NamedData("chosen")).mark_text(
        align="left", baseline="bottom", dx=3, dy=-2, fontSize=10).encode(
        x=x, y=alt.YValue(HEIGHT), text=alt.Text("label:N"))
    one_label = alt.Chart(alt.NamedData("chosen")).mark_text(
        align="right", baseline="bottom", dy=-2, fontSize=10, color="#555555").encode(
        x=alt.XValue(WIDTH), y=alt.YDatum(1.0), text=alt.TextValue("1× = plain decoding"))
    chart = TemplateLayerChart(layer=[lines, chosen, one, chosen_label, one_label],
                               datasets={"factors": [], "chosen": []},
                               title=title, width=WIDTH, height=HEIGHT)
    return chart.freeze()


@described(
    'Speed-up and extra arithmetic of speculative decoding against the speculation length, '
    'with the chosen length dashed and plain decoding (1x) as a grey rule: the speed-up peaks '
    'while the extra arithmetic keeps growing.')
def speculation_chart(table: pd.DataFrame, k: int, *,
                      title: str = "Speculative decoding against k") -> alt.LayerChart:
    """Speed-up and arithmetic factor against speculation length, with the chosen ``k`` marked
    (dashed) and plain decoding (1×) as a grey rule.

    ``table`` is ``serving.speculation_table(...)`` (``k``, ``speedup``, ``operations_factor``).
    """
    ks = [int(x) for x in table["k"]]
    factors = ([{"k": k_, "what": _SPEC_SERIES[0], "factor": round(float(f), 4)}
                for k_, f in zip(ks, table["speedup"])]
               + [{"k": k_, "what": _SPEC_SERIES[1], "factor": round(float(f), 4)}
                  for k_, f in zip(ks, table["operations_factor"])])
    return _speculation_template(title).with_datasets(
        {"factors": factors, "chosen": [{"k": int(k), "label": f"chosen k = {int(k)}"}]})


@described(
    'Bars of the simulated share of target passes by tokens accepted, against points of the '
    'capped geometric distribution the formula assumes: the two agree.')
def speculation_histogram_chart(hist: pd.DataFrame, *, title: str = "Tokens per target pass") -> alt.LayerChart:
    """Simulated share of passes (bars) against the capped geometric distribution (points).

    ``hist`` is ``SpeculationSimulation.histogram()`` (``tokens``, ``probability``, ``simulated``).
    """
    d = hist[["tokens", "probability", "simulated"]].copy()
    d["probability"] = d["probability"].round(4)
    d["simulated"] = d["simulated"].round(4)
    with debug_mode(False):
        x = alt.X("tokens:O", title="tokens produced by one target pass", axis=alt.Axis(labelAngle=0))
        bars = alt.Chart().mark_bar(color=PALETTE[0], opacity=0.7).encode(
            x=x, y=alt.Y("simulated:Q", title="share of passes"),
            tooltip=[alt.Tooltip("tokens:O"), alt.Tooltip("simulated:Q", format=".4f"),
                     alt.Tooltip("probability:Q", format=".4f", title="formula")])
        pts = alt.Chart().mark_point(color="black", filled=True, size=60, shape="diamond").encode(
            x=x, y=alt.Y("probability:Q"))
        return alt.layer(bars, pts, data=inline_rows(d), title=title, width=WIDTH, height=200)


@described(
    'Grouped bars of output tokens per second per chip, one bar per chip, one group per case.')
def chips_chart(df: pd.DataFrame, *, title: str = "Decode on Trainium2 and Trainium3") -> alt.Chart:
    """Grouped bars of output tokens/s per chip by chip, one group per ``case``.

    ``df`` has columns ``case``, ``name`` and ``tokens_per_s_per_chip``
    (``serving.chip_decode_table`` rows plus a ``case`` label).
    """
    d = df[["case", "name", "tokens_per_s_per_chip"]].copy()
    d["tokens_per_s_per_chip"] = d["tokens_per_s_per_chip"].round(1)
    with debug_mode(False):
        return alt.Chart(inline_rows(d), title=title, width=140, height=200).mark_bar().encode(
            x=alt.X("name:N", title=None, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("tokens_per_s_per_chip:Q", title="output tokens/s per chip (bound)"),
            color=alt.Color("name:N", scale=alt.Scale(range=[PALETTE[0], PALETTE[4]]), legend=None),
            column=alt.Column("case:N", sort=None, title=None),
            tooltip=[alt.Tooltip("case:N"), alt.Tooltip("name:N"),
                     alt.Tooltip("tokens_per_s_per_chip:Q", format=",.0f")])


@described(
    'Padding waste against the device memory of the loaded NEFFs, one labelled point per '
    'number of buckets: more buckets waste less padding and hold more memory.')
def bucket_chart(df: pd.DataFrame, *, title: str = "More buckets: less padding, more NEFF memory") -> alt.LayerChart:
    """Padding waste against NEFF memory, one labelled point per number of buckets.

    ``df`` is ``serving.bucket_tradeoff(...)`` (``n_buckets``, ``padding_waste``, ``neff_gib``).
    """
    d = df[["n_buckets", "padding_waste", "neff_gib"]].copy()
    d["padding_waste"] = (100 * d["padding_waste"]).round(2)
    d["neff_gib"] = d["neff_gib"].round(3)
    d["label"] = d["n_buckets"].astype(str) + " bucket" + d["n_buckets"].map(lambda n: "" if n == 1 else "s")
    with debug_mode(False):
        x = alt.X("neff_gib:Q", title="NEFF memory per logical core (GiB, assumed size per NEFF)")
        y = alt.Y("padding_waste:Q", title="padded tokens (% of tokens run)")
        line = alt.Chart().mark_line(color="#888").encode(x=x, y=y, order=alt.Order("n_buckets:Q"))
        pts = alt.Chart().mark_point(filled=True, size=70, color=PALETTE[0]).encode(
            x=x, y=y, tooltip=[alt.Tooltip("label:N"), alt.Tooltip("padding_waste:Q", format=".1f"),
                               alt.Tooltip("neff_gib:Q", format=".2f")])
        text = alt.Chart().mark_text(align="left", dx=6, dy=-6, fontSize=11).encode(x=x, y=y, text=alt.Text("label:N"))
        return alt.layer(line, pts, text, data=inline_rows(d), title=title, width=WIDTH, height=HEIGHT)
