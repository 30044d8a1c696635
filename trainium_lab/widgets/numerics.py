"""Chapter 02's widgets: bits of a float, one rounding, repeated updates, training.

Each factory wires controls to a model in ``trainium_lab.numerics`` and a chart
in ``trainium_lab.charts.numerics``; nothing is computed here.
"""

from __future__ import annotations

import ipywidgets as W
import pandas as pd

from trainium_lab import numerics, views
from trainium_lab.charts import numerics as charts
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["bits_explorer", "rounding_explorer", "repeated_updates_explorer",
           "training_explorer"]

_LOW = [(numerics.LABELS[f], f) for f in numerics.FORMATS if f != "float32"]
_ALL = [(numerics.LABELS[f], f) for f in numerics.FORMATS]


def _format_dropdown(value: str = "bfloat16", options=None) -> W.Dropdown:
    return W.Dropdown(options=options or _LOW, value=value, description="format")


@benchmarked(("value", -0.1), ("dtype", "float8_e4m3fn"))
def bits_explorer(value: float = 1.0, dtype: str = "bfloat16") -> Explorer:
    """A value and a format; the stored bits, coloured by field, and what they mean."""
    controls = {"value": W.FloatText(value=value, description="value"),
                "dtype": _format_dropdown(dtype, _ALL)}

    def describe(b: numerics.BitPattern) -> str:
        return f"stored as <b>{b.stored:.10g}</b> ({b.kind}): <code>{views.bit_formula(b)}</code>"

    return Explorer(controls, numerics.bit_fields, charts.bits_chart, describe)


@benchmarked(("value", 1.003), ("dtype", "float8_e5m2"), ("n_draws", 200))
def rounding_explorer(value: float = 1.001, dtype: str = "bfloat16") -> Explorer:
    """One value rounded to nearest and, many times, stochastically."""
    controls = {"value": W.FloatText(value=value, description="value"),
                "dtype": _format_dropdown(dtype),
                "n_draws": W.IntSlider(value=1000, min=10, max=10_000, step=10,
                                       description="draws")}

    def compute(value: float, dtype: str, n_draws: int) -> numerics.RoundingDraws:
        return numerics.rounding_draws(value, dtype, n_draws, seed=0)

    def describe(r: numerics.RoundingDraws) -> str:
        return (f"{r.value:.8g} → nearest <b>{r.nearest:.8g}</b>; "
                f"stochastic mean of {r.n_draws:,} draws <b>{r.mean:.8g}</b> "
                f"(error {r.mean - r.value:+.2g} against {r.nearest - r.value:+.2g})")

    return Explorer(controls, compute, charts.rounding_chart, describe)


@benchmarked(("update", 1e-3), ("n_steps", 1000), ("dtype", "float8_e4m3fn"),
             ("mode", "stochastic"))
def repeated_updates_explorer(n_weights: int = 128) -> Explorer:
    """Update size, steps, format and mode; the mean weight against the exact sum."""
    controls = {
        "update": W.FloatLogSlider(value=1e-4, base=10, min=-6, max=-1, step=0.1,
                                   description="update", readout_format=".1e"),
        "n_steps": W.IntSlider(value=500, min=0, max=1000, step=50, description="steps"),
        "dtype": _format_dropdown("bfloat16"),
        "mode": W.Dropdown(options=["both", "nearest", "stochastic"], value="both",
                           description="mode"),
    }

    def compute(update: float, n_steps: int, dtype: str, mode: str) -> pd.DataFrame:
        modes = numerics.MODES if mode == "both" else (mode,)
        return pd.concat([numerics.repeated_updates(update, n_steps, dtype, m,
                                                    n_weights=n_weights, record_every=10)
                          for m in modes], ignore_index=True)

    def describe(df: pd.DataFrame) -> str:
        last = df[df.step == df.step.max()]
        parts = [f"{r.mode}: <b>{r.mean:.5f}</b>" for r in last.itertuples()]
        return (f"after {int(last.step.iloc[0])} steps, mean of {n_weights} weights: "
                + ", ".join(parts) + f"; exact <b>{last.exact.iloc[0]:.5f}</b>")

    return Explorer(controls, compute, charts.repeated_updates_chart, describe)


@benchmarked(("learning_rate", 0.005), ("n_steps", 500), ("dtype", "float8_e5m2"))
def training_explorer(learning_rate: float = 0.03) -> Explorer:
    """Learning rate, steps and format; four loss curves of the same regression."""
    controls = {
        "learning_rate": W.FloatLogSlider(value=learning_rate, base=10, min=-3, max=0, step=0.1,
                                          description="learning rate", readout_format=".3f"),
        "n_steps": W.IntSlider(value=300, min=10, max=500, step=10, description="steps"),
        "dtype": _format_dropdown("bfloat16"),
    }

    def compute(learning_rate: float, n_steps: int, dtype: str) -> numerics.TrainingCurves:
        return numerics.train_linear_regression(learning_rate, n_steps, dtype, record_every=5)

    def describe(run: numerics.TrainingCurves) -> str:
        last = run.losses[run.losses.step == run.losses.step.max()]
        parts = [f"{r.label}: <b>{r.loss:.4f}</b>" for r in last.itertuples()]
        return "final loss: " + ", ".join(parts) + f" (best possible {run.noise_floor:.4f})"

    return Explorer(controls, compute, charts.loss_curves_chart, describe)


# --------------------------------------------------------------------- block scaling (issue 15)

# labels from the one table of number formats (trainium_lab.dtypes, through numerics)
_MX_OF = {element: numerics.MX_LABELS[mx] for mx, element in numerics.MX_FORMATS.items()}
_ELEMENTS = [(numerics.LABELS[element], element) for element in _MX_OF]
_PER_TENSOR_OF = {element: f"per-tensor {numerics.LABELS[element]}" for element in _MX_OF}


def _block_scaling_view(df: float, element: str, block_size: int, rule: str, n: int = 16_384):
    x = numerics.heavy_tailed_tensor(n, df, seed=0)
    mx = _MX_OF[element] + (", scale rounded up" if rule == "ceil" else "")
    schemes = (_PER_TENSOR_OF[element], mx)
    return (numerics.error_by_magnitude(x, schemes, block_size),
            numerics.block_scaling_comparison(x, schemes, block_size), block_size)


def _describe_block_scaling(view) -> str:
    _, table, block_size = view
    rows = "".join(
        f"<tr><td>{r.scheme}</td><td>{r.bits_per_value:.3g}</td><td>{r.median_rel_error:.2%}</td>"
        f"<td>{r.p99_rel_error:.1%}</td><td>{r.underflow:.2%}</td><td>{r.clamped:.2%}</td></tr>"
        for r in table.itertuples())
    return (f"16,384 seeded values, MX blocks of <b>{block_size:,}</b> (the spec's: 32)."
            "<table><tr><th>scheme</th><th>bits/value</th><th>median error</th><th>99th pct</th>"
            f"<th>stored as 0</th><th>clamped</th></tr>{rows}</table>")


@benchmarked(("df", 3.0), ("element", "float4_e2m1fn"), ("block_size", 256), ("rule", "ceil"))
def block_scaling_explorer(df: float = 1.0) -> Explorer:
    """Tail heaviness, element format, block size and scale rule; per-tensor against MX error."""
    controls = {
        "df": W.FloatLogSlider(value=df, base=10, min=-0.3, max=1.5, step=0.05,
                               description="tail (t dof)", readout_format=".2f"),
        "element": W.Dropdown(options=_ELEMENTS, value="float8_e4m3fn", description="element"),
        "block_size": W.Dropdown(options=[8, 16, 32, 64, 128, 256, 1024, 4096, 16_384], value=32,
                                 description="block size"),
        "rule": W.Dropdown(options=[("floor (OCP spec)", "floor"), ("round up", "ceil")],
                           value="floor", description="scale rule"),
    }
    return Explorer(controls, _block_scaling_view, lambda v: charts.error_by_magnitude_chart(v[0]),
                    _describe_block_scaling)


__all__ += ["block_scaling_explorer"]
