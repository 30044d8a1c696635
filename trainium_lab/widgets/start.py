"""Chapter 00's first widget: weights versus one chip's HBM."""

from __future__ import annotations

import ipywidgets as W

from trainium_lab import intro, specs
from trainium_lab.charts.start import memory_bar_chart
from trainium_lab.widgets.base import Explorer, benchmarked

_BYTES = {"FP32 (4 bytes)": 4.0, "BF16 (2 bytes)": 2.0, "FP8 (1 byte)": 1.0}


def _compute(n_params_billion: float, weight_format: str, chip: str):
    return intro.weights_vs_hbm(n_params_billion * 1e9, _BYTES[weight_format], chip)


def _describe(df) -> str:
    n = df.attrs["chips_needed"]
    return (f"<b>{df.gib[0]:,.1f} GiB</b> of weights against <b>{df.gib[1]:,.0f} GiB</b> of HBM: "
            f"at least <b>{n}</b> chip{'s' if n != 1 else ''} for the weights alone.")


@benchmarked(("n_params_billion", 70.0), ("weight_format", "FP8 (1 byte)"), ("chip", "trn3"))
def weights_explorer(n_params_billion: float = 8.0) -> Explorer:
    """Slider for model size, dropdowns for weight format and chip; a bar chart."""
    controls = {
        "n_params_billion": W.FloatText(value=n_params_billion, description="params (B)",
                                        step=1.0),
        "weight_format": W.Dropdown(options=list(_BYTES), value="BF16 (2 bytes)",
                                    description="format"),
        "chip": W.Dropdown(options=[(c.name, c.key) for c in specs.chips()], value="trn2",
                           description="chip"),
    }
    return Explorer(controls, _compute, memory_bar_chart, _describe)
