"""Widgets survive without a kernel: every stored widget output also carries a static SVG of the
widget's default view (shown by GitHub, nbviewer, nbconvert and the static site, which cannot run
the widget), drawn by the course's renderer; the live widget replaces it when a kernel runs."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"


def widget_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
            if WIDGET in o.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_widget_output_stores_its_default_view(path):
    outputs = widget_outputs(path)
    assert outputs, f"{path.name} has no widget (the anatomy asks for an Explore section)"
    for out in outputs:
        svg = "".join(out["data"].get("image/svg+xml", ""))
        html = "".join(out["data"].get("text/html", ""))
        assert (svg.startswith("<svg") and "marks" in svg) or html.strip(), \
            f"{path.name}: a widget without a static view"
        assert "run the cell" in "".join(out["data"]["text/plain"])


def test_explorer_bundle_has_the_live_widget_and_the_static_view():
    from trainium_lab.widgets.base import BENCHMARKS
    import trainium_lab.widgets.topology  # noqa: F401  (registers its factories)

    factory, _ = BENCHMARKS["topology.ring_stepper"]
    bundle = factory()._repr_mimebundle_()
    assert WIDGET in bundle and bundle["image/svg+xml"].startswith("<svg")
