"""Chart colours stay apart for readers with the common colour-vision deficiencies.

Every legend of every stored chart (the colours that encode a category) is checked: each pair of
its colours must differ by at least ``MIN_DELTA_E`` in CIELAB (CIE 1976 ΔE*ab) as seen with full
protanopia, deuteranopia and tritanopia, simulated with the matrices of Machado, Oliveira and
Fernandes, "A Physiologically-based Model for Simulation of Color Vision Deficiency", IEEE TVCG
15(6), 2009 (severity 1.0, applied to linear sRGB), and with normal vision. ΔE ≈ 2.3 is a just
noticeable difference (Sharma, "Digital Color Imaging Handbook", 2003); 10 asks for colours told
apart at a glance in a legend.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from trainium_lab.charts.base import PALETTE

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIN_DELTA_E = 10.0
#: Machado et al. (2009), Table 1, severity 1.0
SIMULATIONS = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
#: sRGB (D65) to XYZ, IEC 61966-2-1
SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
D65 = np.array([0.95047, 1.0, 1.08883])


def linear_rgb(hex_colour: str) -> np.ndarray:
    h = hex_colour.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    c = np.array([int(h[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def cielab(rgb: np.ndarray) -> np.ndarray:
    xyz = SRGB_TO_XYZ @ np.clip(rgb, 0.0, 1.0) / D65
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours: list[str]) -> tuple[float, str, tuple[str, str]]:
    """(smallest ΔE, under which vision, between which two colours)."""
    worst = (np.inf, "", ("", ""))
    for vision, matrix in SIMULATIONS.items():
        labs = [cielab(matrix @ linear_rgb(c)) for c in colours]
        for (i, a), (j, b) in itertools.combinations(enumerate(labs), 2):
            d = float(np.linalg.norm(a - b))
            if d < worst[0]:
                worst = (d, vision, (colours[i], colours[j]))
    return worst


LEGEND = re.compile(r'aria-roledescription="legend" aria-label="([^"]*)"')
SYMBOL = re.compile(r'role-legend-symbol"[^>]*>\s*<path\b[^>]*?\b(?:fill|stroke)="(#[0-9a-fA-F]{3,6})"')


def legends(svg: str) -> list[tuple[str, list[str]]]:
    """(legend label, its symbols' colours) for each legend of a chart's SVG."""
    starts = [m for m in LEGEND.finditer(svg)]
    out = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(svg)
        colours = list(dict.fromkeys(c.lower() for c in SYMBOL.findall(svg, m.end(), end)))
        out.append((m.group(1), colours))
    return out


def stored_legends() -> list[tuple[str, str, list[str]]]:
    found = []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            for out in cell.get("outputs", []):
                svg = out.get("data", {}).get("image/svg+xml")
                if svg:
                    svg = "".join(svg) if isinstance(svg, list) else svg
                    found += [(f"{path.stem} cell {i}", label, colours)
                              for label, colours in legends(svg) if len(colours) > 1]
    return found


def test_the_simulation_sees_what_a_deuteranope_sees():
    """Tableau 10's red and green, the pair that made this test, collapse for a deuteranope."""
    d, vision, _ = closest_pair(["#e15759", "#59a14f"])
    assert vision == "deuteranopia" and d < 2
    assert closest_pair(["#000000", "#ffffff"])[0] > 99  # black and white stay ~100 apart


def test_the_first_eight_palette_colours_stay_apart():
    d, vision, pair = closest_pair(PALETTE[:8])
    assert d >= MIN_DELTA_E, f"{pair} differ by ΔE {d:.1f} with {vision}"


def test_there_are_legends_to_check():
    assert len(LEGENDS) >= 20


LEGENDS = stored_legends()


@pytest.mark.parametrize("where,label,colours", LEGENDS,
                         ids=[f"{w.replace(' ', '-')}-{k}" for k, (w, _, _) in enumerate(LEGENDS)])
def test_every_legend_is_readable_with_colour_vision_deficiencies(where, label, colours):
    d, vision, pair = closest_pair(colours)
    assert d >= MIN_DELTA_E, f"{where}, {label[:60]}: {pair} differ by ΔE {d:.1f} with {vision}"
