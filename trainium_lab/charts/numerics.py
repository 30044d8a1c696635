"""Charts for chapter 02 (numerics). Encodings only: every number comes from
``trainium_lab.numerics``."""

from __future__ import annotations

import functools
import math

import altair as alt
import pandas as pd

from trainium_lab import numerics
from trainium_lab._validate import instance
from trainium_lab.charts.base import HEIGHT, PALETTE, WIDTH, TemplateChart, base, described
from trainium_lab.views import bit_formula

__all__ = ["bits_chart", "spacing_chart", "rounding_chart", "repeated_updates_chart",
           "loss_curves_chart", "memory_chart", "fp8_range_chart", "fp8_scaling_chart"]

_FIELD_COLORS = alt.Scale(domain=["sign", "exponent", "mantissa"],
                          range=["#cc79a7", "#009e73", "#e69f00"])


#: width of the bits chart, whatever the format: 30 px a bit for the 16-bit formats, 15 for
#: float32, 60 for FP8; one width, so a widget that changes the format only swaps the data
_BITS_WIDTH = 480


@functools.lru_cache(maxsize=1)
def _bits_template() -> TemplateChart:
    """The bits chart with its rows as a named (empty) data set, built once: a widget update
    only swaps the data and the title."""
    return TemplateChart(alt.NamedData("bits"), width=_BITS_WIDTH, height=40,
                         datasets={"bits": []}).mark_rect(stroke="white", strokeWidth=2).encode(
        x=alt.X("cell:O", title=None, sort=None,
                axis=alt.Axis(labelExpr="split(datum.value, ':')[1]", labelAngle=0,
                              labelFontSize=14, ticks=False, domain=False)),
        color=alt.Color("field:N", scale=_FIELD_COLORS, title=None,
                        legend=alt.Legend(orient="bottom")),
        opacity=alt.Opacity("shade:Q", legend=None, scale=None),
        tooltip=[alt.Tooltip("position:O"), alt.Tooltip("field:N"), alt.Tooltip("bit:Q")],
    ).freeze()


@described(
    'One box per bit of a floating-point number, coloured by field (sign, exponent, '
    "mantissa), with each bit's value written under it.")
def bits_chart(pattern: numerics.BitPattern) -> alt.Chart:
    """One box per bit, coloured by field; the bit is written in the axis label.

    ``pattern`` is :func:`trainium_lab.numerics.bit_fields` output; the title writes it out
    with :func:`trainium_lab.views.bit_formula`. A template with the bits as a named data set
    (one width for every format), so a widget redraws it by swapping the data.
    """
    pattern = instance("pattern", pattern, numerics.BitPattern, "a BitPattern from numerics.bit_fields")
    df = pattern.table()
    rows = [{"position": p, "bit": b, "field": f, "cell": f"{p:02d}:{b}", "shade": 1.0 if b else 0.35}
            for p, b, f in zip(df["position"].tolist(), df["bit"].tolist(), df["field"].tolist())]
    chart = _bits_template().with_datasets({"bits": rows})
    return chart.with_props(title=f"{pattern.format}: {bit_formula(pattern)}")


@described(
    'Log-log step lines of the gap between neighbouring representable values against the '
    'value, one per number format: the gap doubles at every power of two, and formats with '
    'fewer mantissa bits have wider gaps.')
def spacing_chart(df: pd.DataFrame, *, x_min: float | None = None,
                  x_max: float | None = None) -> alt.Chart:
    """Spacing between neighbouring values against value, log-log, one step line per format.

    ``df`` is one or more :func:`trainium_lab.numerics.spacing_table` outputs stacked.
    """
    data = df
    if x_min is not None:
        data = data[data.end > x_min]
    if x_max is not None:
        data = data[data.start < x_max]
    scale_x = alt.Scale(type="log", domain=[x_min, x_max]) if x_min and x_max else \
        alt.Scale(type="log")
    return base(data, title="Gap between neighbouring values").mark_line(
        interpolate="step-after", clip=True).encode(
        x=alt.X("start:Q", scale=scale_x, title="value", axis=alt.Axis(format=".0e")),
        y=alt.Y("spacing:Q", scale=alt.Scale(type="log"), title="spacing (ulp)",
                axis=alt.Axis(format=".0e")),
        color=alt.Color("label:N", title=None, scale=alt.Scale(range=PALETTE)),
        tooltip=[alt.Tooltip("label:N"), alt.Tooltip("start:Q", format=".3g"),
                 alt.Tooltip("spacing:Q", format=".3g"), alt.Tooltip("relative:Q", format=".3g")],
    )


@functools.lru_cache(maxsize=64)
def _rounding_template(title: str) -> "TemplateChart":
    return TemplateChart(alt.NamedData("rows"), width=WIDTH, height=160, datasets={"rows": []},
                         title=title).mark_bar().encode(
        x=alt.X("result_text:N", title="rounded value", sort=None, axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("what:N"),
        y=alt.Y("share:Q", title="probability", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("what:N", title=None, scale=alt.Scale(range=["#0072b2", "#e69f00"])),
        tooltip=[alt.Tooltip("result_text:N"), alt.Tooltip("what:N"), alt.Tooltip("share:Q", format=".4f")],
    ).freeze()


@described(
    'Bars of the probability and the observed share with which stochastic rounding sends one '
    'value to each of its two neighbours: the nearer neighbour is chosen more often, in '
    'proportion to closeness.')
def rounding_chart(draws: numerics.RoundingDraws) -> alt.Chart:
    """Stochastic rounding of one value: probability and observed share per neighbour.

    ``draws`` is :func:`trainium_lab.numerics.rounding_draws` output: grouped bars, theory
    beside the share of the draws, the round-to-nearest result marked in its label. Built
    from a template cached by title, so a widget update only swaps the data.
    """
    draws = instance("draws", draws, numerics.RoundingDraws,
                     "a RoundingDraws from numerics.rounding_draws")
    t = draws.table
    rows = []
    for what, column in (("probability (theory)", "probability"), ("share of draws", "frequency")):
        rows += [{"result_text": f"{r:.8g}" + (" (nearest)" if n else ""), "what": what, "share": float(v)}
                 for r, n, v in zip(t["result"], t["nearest"], t[column])]
    return _rounding_template(f"Rounding {draws.value:.8g} to {draws.format}").with_datasets({"rows": rows})


@functools.lru_cache(maxsize=1)
def _repeated_updates_template() -> "TemplateChart":
    modes = ["nearest", "stochastic", "exact sum"]
    return TemplateChart(alt.NamedData("rows"), width=WIDTH, height=HEIGHT, datasets={"rows": []},
                         title="Adding the same small update again and again").mark_line().encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("mean:Q", title="mean weight", scale=alt.Scale(zero=False)),
        color=alt.Color("mode:N", title=None, scale=alt.Scale(domain=modes,
                                                              range=["#d55e00", "#0072b2", "#000000"])),
        strokeDash=alt.StrokeDash("mode:N", title=None, scale=alt.Scale(
            domain=modes, range=[[1, 0], [1, 0], [4, 4]])),
        tooltip=[alt.Tooltip("mode:N"), alt.Tooltip("step:Q"), alt.Tooltip("mean:Q", format=".6f")],
    ).freeze()


@described(
    'Line chart of the mean weight against the step for each rounding mode, with the exact '
    'sum dashed: round-to-nearest stays flat when each update is below half the gap, '
    'stochastic rounding follows the exact sum on average.')
def repeated_updates_chart(df: pd.DataFrame) -> alt.Chart:
    """Mean weight against step per rounding mode, with the exact sum dashed.

    ``df`` is one or more :func:`trainium_lab.numerics.repeated_updates` outputs
    stacked. Built from a cached template, so a widget update only swaps the data.
    """
    exact = df.drop_duplicates("step")
    rows = ([{"step": int(t), "mean": float(m), "mode": str(o)} for t, m, o in zip(df["step"], df["mean"], df["mode"])]
            + [{"step": int(t), "mean": float(e), "mode": "exact sum"} for t, e in zip(exact["step"], exact["exact"])])
    return _repeated_updates_template().with_datasets({"rows": rows})


@functools.lru_cache(maxsize=16)
def _loss_curves_template(title: str) -> "TemplateChart":
    return TemplateChart(alt.NamedData("rows"), width=WIDTH, height=HEIGHT, datasets={"rows": []},
                         title=title).mark_line().encode(
        x=alt.X("step:Q", title="step"),
        y=alt.Y("loss:Q", scale=alt.Scale(type="log"), title="loss (log scale)"),
        color=alt.Color("label:N", title=None, sort=None, scale=alt.Scale(range=PALETTE)),
        strokeDash=alt.StrokeDash("label:N", sort=None, title=None,
                                  scale=alt.Scale(range=[[1, 0], [1, 0], [6, 3], [2, 2]])),
        tooltip=[alt.Tooltip("label:N"), alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".4f")],
    ).freeze()


@described(
    'Training loss against step on a log scale, one line per way of keeping the weights: '
    'FP32, BF16 with round-to-nearest, BF16 with stochastic rounding, and BF16 with an FP32 '
    'master copy.')
def loss_curves_chart(curves: numerics.TrainingCurves) -> alt.Chart:
    """Training loss against step, one line per way of keeping the weights (log y).

    ``curves`` is :func:`trainium_lab.numerics.train_linear_regression` output; the
    least-squares loss is in the title. Built from a cached template, so a widget update
    only swaps the data.
    """
    curves = instance("curves", curves, numerics.TrainingCurves,
                      "a TrainingCurves from numerics.train_linear_regression")
    d = curves.losses
    rows = [{"step": int(t), "label": str(lab), "loss": float(v) if math.isfinite(v) else None}  # JSON has no inf
            for t, lab, v in zip(d["step"], d["label"], d["loss"])]
    title = (f"Loss curves, learning rate {curves.learning_rate:g} "
             f"(best possible {curves.noise_floor:.3f})")
    return _loss_curves_template(title).with_datasets({"rows": rows})


@described(
    "Bars of the training state with and without the FP32 master copy, counted in chips' "
    'worth of HBM.')
def memory_chart(saving: numerics.MasterWeightsSaving) -> alt.Chart:
    """Training state with and without the FP32 master copy, in chips' worth of HBM.

    ``saving`` is :func:`trainium_lab.numerics.master_weights_saving` output.
    """
    saving = instance("saving", saving, numerics.MasterWeightsSaving,
                      "a MasterWeightsSaving from numerics.master_weights_saving")
    bars = base(saving.table, height=80, title=f"Training state, counted in {saving.chip} chips' HBM"
                ).mark_bar().encode(
        x=alt.X("chips:Q", title=f"{saving.chip} HBMs (state only)"),
        y=alt.Y("setup:N", title=None, sort=None),
        color=alt.Color("setup:N", legend=None, scale=alt.Scale(range=["#0072b2", "#009e73"])),
        tooltip=[alt.Tooltip("setup:N"), alt.Tooltip("bytes_per_param:Q", title="bytes/param"),
                 alt.Tooltip("state_gib:Q", format=",.0f", title="GiB"),
                 alt.Tooltip("chips_needed:Q", title="chips needed")],
    )
    return bars


@described(
    'The range of each number format on a log axis: subnormal values as a thin bar, normal '
    'values as a thick one; E5M2 reaches further, E4M3 is finer.')
def fp8_range_chart(df: pd.DataFrame) -> alt.LayerChart:
    """Each format's range on a log axis: subnormals thin, normals thick.

    ``df`` is :func:`trainium_lab.numerics.formats_table` output.
    """
    chart = base(df, height=30 * len(df) + 20, title="Representable magnitudes")
    sub = chart.mark_rule(strokeWidth=4, opacity=0.5).encode(
        x=alt.X("min_subnormal:Q", scale=alt.Scale(type="log"), title="magnitude",
                axis=alt.Axis(format=".0e")),
        x2=alt.X2("min_normal:Q"), y=alt.Y("label:N", sort=None, title=None),
        color=alt.Color("label:N", legend=None, scale=alt.Scale(range=PALETTE)))
    normal = chart.mark_rule(strokeWidth=12).encode(
        x=alt.X("min_normal:Q"), x2=alt.X2("max_finite:Q"), y=alt.Y("label:N", sort=None),
        color=alt.Color("label:N", legend=None),
        tooltip=[alt.Tooltip("label:N"), alt.Tooltip("min_subnormal:Q", format=".3g"),
                 alt.Tooltip("min_normal:Q", format=".3g"),
                 alt.Tooltip("max_finite:Q", format=".4g")])
    return sub + normal


@described(
    'Bars of the share of values lost to underflow for each FP8 format, with and without a '
    'per-tensor scale.')
def fp8_scaling_chart(df: pd.DataFrame) -> alt.Chart:
    """Share of values lost to underflow, per FP8 format, with and without scaling.

    ``df`` is :func:`trainium_lab.numerics.fp8_scaling_demo` output.
    """
    return base(df, height=120, title="Small values flushed to zero in FP8").mark_bar().encode(
        x=alt.X("underflow:Q", title="share of values that became 0",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("label:N", title=None),
        yOffset=alt.YOffset("scaling:N"),
        color=alt.Color("scaling:N", title="scaling", scale=alt.Scale(range=["#d55e00", "#009e73"])),
        tooltip=[alt.Tooltip("label:N"), alt.Tooltip("scaling:N"), alt.Tooltip("underflow:Q", format=".1%"),
                 alt.Tooltip("rel_error:Q", format=".3f", title="median relative error")],
    )


# --------------------------------------------------------------------- block scaling (issue 15)

_SCHEME_COLORS = ["#d55e00", "#0072b2", "#009e73", "#e69f00", "#56b4e9", "#cc79a7", "#f0e442",
                  "#332288", "#8c510a"]




@functools.lru_cache(maxsize=4)
def _error_by_magnitude_template(title: str) -> TemplateChart:
    chart = TemplateChart(alt.NamedData("rows"), width=WIDTH, height=HEIGHT, title=title,
                          datasets={"rows": []}).mark_line(point=True).encode(
        x=alt.X("magnitude:Q", scale=alt.Scale(type="log", base=2), title="|value| (log scale)",
                axis=alt.Axis(format=".0e")),
        y=alt.Y("median_rel_error:Q", scale=alt.Scale(type="log", domain=[1e-3, 1], clamp=True),
                title="median relative error (log; 1 = stored as 0)", axis=alt.Axis(format="%")),
        color=alt.Color("scheme:N", title=None, sort=None, scale=alt.Scale(range=_SCHEME_COLORS),
                        legend=alt.Legend(orient="bottom", columns=2)),
        tooltip=[alt.Tooltip("scheme:N"), alt.Tooltip("magnitude:Q", format=".3g", title="values from"),
                 alt.Tooltip("n_values:Q", title="values"),
                 alt.Tooltip("median_rel_error:Q", format=".2%", title="median relative error")],
    )
    return chart.freeze()


@described(
    "Log-log lines of the median relative error against the values' magnitude, one per "
    'scaling scheme: a shared scale per block of 32 keeps small values that one scale per '
    'tensor loses.')
def error_by_magnitude_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.Chart:
    """Median relative error against the values' magnitude, one line per scheme (log-log).

    ``df`` is :func:`trainium_lab.numerics.error_by_magnitude` output. A value stored as 0
    has relative error 1, the top of the axis. Built from a cached template, so a widget
    update only swaps the data.
    """
    rows = [{"scheme": s, "magnitude": float(m), "n_values": int(n), "median_rel_error": float(e)}
            for s, m, n, e in zip(df.scheme, df.magnitude, df.n_values, df.median_rel_error)]
    title = title or "Relative error by magnitude: where each scheme loses values"
    return _error_by_magnitude_template(title).with_datasets({"rows": rows})


@described(
    'One MX block value by value: each input as a circle and what the format stores as a '
    "cross; values far below the block's largest one round to zero.")
def mx_block_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.Chart:
    """One MX block value by value: the input (circle) and what the format stores (cross).

    ``df`` is :func:`trainium_lab.numerics.mx_block_table` output; clamped values are red.
    """
    long = df.melt(id_vars=["index", "clamped"], value_vars=["value", "stored"],
                   var_name="what", value_name="number")
    long["what"] = long["what"].map({"value": "input", "stored": "stored"})
    long["mark"] = [("clamped" if c else "stored") if w == "stored" else "input"
                    for c, w in zip(long.clamped, long.what)]
    e = int(df.scale_exponent.iloc[0])
    return base(long, height=200, title=title or f"One block, shared scale X = 2^{e}").mark_point(
        size=70, filled=False).encode(
        # 9 px labels: 32 two-digit labels at 10 px came within 2 px of each other
        x=alt.X("index:O", title="element of the block", axis=alt.Axis(labelAngle=0, labelFontSize=9)),
        y=alt.Y("number:Q", title="value"),
        shape=alt.Shape("mark:N", title=None, scale=alt.Scale(
            domain=["input", "stored", "clamped"], range=["circle", "cross", "cross"])),
        color=alt.Color("mark:N", title=None, scale=alt.Scale(
            domain=["input", "stored", "clamped"], range=["#0072b2", "#e69f00", "#d55e00"])),
        tooltip=[alt.Tooltip("index:O"), alt.Tooltip("mark:N"), alt.Tooltip("number:Q", format=".4g")],
    )


__all__ += ["error_by_magnitude_chart", "mx_block_chart"]
