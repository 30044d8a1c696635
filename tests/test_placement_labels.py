"""A rank-to-chip map's rank labels fit their cells (issue 42: "rank labels of 1,000 and more spill
out of their cells"). The font is chosen from the widest label (``charts.topology._rank_label_layout``, private: every public name of a charts module is a chart);
these tests hold the choice to the cell width with the course's text-width estimate, and check the
rendered chart's labels the same way."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from trainium_lab import topology, views
from trainium_lab.charts import base
from trainium_lab.charts import topology as ct
from trainium_lab.charts.base import text_width_px

ROOM_PX = ct._CELL_PX - 2 * ct._RANK_PAD_PX   # a cell less a pixel clear on each side


@pytest.mark.parametrize("largest", [0, 7, 99, 255, 999, 1000, 1023, 4095, 9999, 10000, 16383, 99999])
def test_the_largest_rank_fits_one_cell(largest):
    size, every = ct._rank_label_layout(largest)
    assert every == 1 and ct._MIN_RANK_PX <= size <= ct._RANK_PX
    assert text_width_px(str(largest), size) <= ROOM_PX, (largest, size)
    # and the font is the largest half-pixel step that fits (no smaller than it needs to be)
    if size < ct._RANK_PX:
        assert text_width_px(str(largest), size + 0.5) > ROOM_PX


def test_below_a_thousand_the_font_is_unchanged_and_at_a_thousand_it_shrinks():
    assert ct._rank_label_layout(999) == (ct._RANK_PX, 1)
    assert ct._rank_label_layout(1000)[0] < ct._RANK_PX


def test_past_the_smallest_font_a_label_gets_the_cells_it_needs():
    size, every = ct._rank_label_layout(123456)
    assert size == ct._MIN_RANK_PX and every >= 2
    assert text_width_px("123456", size) <= every * ct._CELL_PX - 2 * ct._RANK_PAD_PX


def test_the_old_layout_would_have_failed():
    """At the old fixed 8 px a four-digit label is wider than its cell: the defect this fixes."""
    assert text_width_px("1023", ct._RANK_PX) > ROOM_PX


@pytest.mark.parametrize("bad", [-1, -1000])
def test_a_negative_rank_raises_value_error_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="largest_rank"):
        ct._rank_label_layout(bad)


def _rank_labels(svg: str) -> list[tuple[str, float]]:
    """(text, font px) of every rank label the rendered map draws."""
    out = []
    for el in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        m = re.search(r"rank_label: (\d+)", el.get("aria-label") or "")
        if m and (el.text or "").strip():
            out.append((el.text.strip(), float(el.get("font-size").rstrip("px"))))
    return out


def test_a_map_of_over_a_thousand_ranks_draws_every_label_inside_its_cell():
    # four UltraServers at LNC=2: 1,024 ranks, first ranks of chips up to 1,020
    p = topology.place(tp=64, pp=4, dp=4, system="trn2-ultraserver", lnc=2)
    df = views.chip_map(p, "tp", 0)
    assert df.first_rank.max() >= 1000
    svg = base.static_svg(ct.placement_chart(df, kind="tp"))
    labels = _rank_labels(svg)
    assert len(labels) == len(df)                         # every chip labelled, none left out
    widest = max(text_width_px(t, size) for t, size in labels)
    assert widest <= ROOM_PX, widest
    assert "each cell shows its chip's first rank" in svg
