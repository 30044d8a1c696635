"""Chapter 00's explorer: does a model fit in the HBM of n chips, with room for the rest?

Model size × what is stored (a weight format for serving, a training recipe) × chip × number
of chips × the share of HBM kept free, against each chip's HBM: the learner finds the fewest
chips, and sees which choices move the answer and which do not.
"""

from __future__ import annotations

import ipywidgets as W

from trainium_lab import intro, numerics, sizing, specs
from trainium_lab.charts.start import hbm_fit_chart
from trainium_lab.units import GiB
from trainium_lab.widgets.base import Explorer, benchmarked, number

__all__ = ["weights_explorer", "stored_options"]

#: serving formats and training recipes offered, in the menu's order
_SERVE = ("float32", "bfloat16", "float8_e4m3fn")
_TRAIN = ("bf16-adam", "bf16-sr-adam", "fp8-sr-bf16-moments")


def stored_options() -> list[tuple[str, str]]:
    """Menu entries (label, value for ``intro.hbm_fit(stored=...)``), bytes per parameter
    computed from the model."""
    out = []
    for d in _SERVE:
        out.append((f"serve: {numerics.LABELS[d]} weights ({intro.hbm_fit(1, d).bytes_per_param:g} B/param)", d))
    for key in _TRAIN:
        r = sizing.recipe(key)
        out.append((f"train: {r.label} ({r.bytes_per_param:g} B/param)", key))
    return out


def _compute(n_params_billion: float, stored: str, chip: str, n_chips: int,
             reserve_pct: float) -> intro.HbmFit:
    return intro.hbm_fit(n_params_billion * 1e9, stored, chip, n_chips, reserve_pct / 100)


def _render(fit: intro.HbmFit):
    verdict = "fits" if fit.fits else f"does not fit: needs ≥ {fit.min_chips} chips"
    return hbm_fit_chart(fit.parts(), chip=f"one {fit.chip}",
                         title=f"{fit.n_params / 1e9:,.4g} B params on {fit.n_chips} × {fit.chip}: {verdict}")


def _describe(fit: intro.HbmFit) -> str:
    verdict = ("<b style='color:#1a7f37'>fits</b>" if fit.fits
               else "<b style='color:#a40000'>does not fit</b>")
    most = fit.n_chips * fit.room_bytes / fit.bytes_per_param
    return (f"{fit.n_params / 1e9:,.4g} B parameters × {fit.bytes_per_param:g} bytes = "
            f"<b>{fit.total_bytes / GiB:,.1f} GiB</b>; split over {fit.n_chips} chip"
            f"{'s' if fit.n_chips != 1 else ''}: <b>{fit.bytes_per_chip / GiB:,.1f} GiB</b> each, against "
            f"<b>{fit.room_bytes / GiB:,.1f} GiB</b> of room ({fit.reserve_share:.0%} of "
            f"{fit.hbm_bytes / GiB:,.0f} GiB kept free): {verdict}. Fewest chips: "
            f"<b>{fit.min_chips}</b>. {'This chip holds' if fit.n_chips == 1 else f'These {fit.n_chips} chips hold'} "
            f"at most {most / 1e9:,.1f} B parameters stored this way.")


@benchmarked(("n_params_billion", 70.0), ("stored", "bf16-adam"), ("chip", "trn3"),
             ("n_chips", 16), ("reserve_pct", 20))
def weights_explorer(n_params_billion: float = 8.0, stored: str = "bfloat16", chip: str = "trn2",
                     n_chips: int = 1) -> Explorer:
    """Model size, what is stored, chip, chip count and reserve → each chip's share against
    its HBM (``intro.hbm_fit``)."""
    controls = {
        "n_params_billion": number("params (B)", n_params_billion, minimum=0, exclusive_minimum=True,
                                   tooltip="params (B): model size, billions of parameters"),
        "stored": W.Dropdown(options=stored_options(), value=stored, description="stored",
                             layout=W.Layout(width="max-content")),
        "chip": W.Dropdown(options=[(c.name, c.key) for c in specs.chips()], value=chip,
                           description="chip"),
        "n_chips": W.IntSlider(value=n_chips, min=1, max=max(128, n_chips), description="chips"),
        # in percent, so the "50" or "50%" a learner types into the readout means 50 %
        "reserve_pct": W.IntSlider(value=round(100 * sizing.DEFAULT_ACTIVATION_SHARE), min=0, max=90,
                                   step=5, description="kept free %",
                                   tooltip="share of each chip's HBM kept free for activations and "
                                           "the runtime, %"),
    }
    return Explorer(controls, _compute, _render, _describe)
