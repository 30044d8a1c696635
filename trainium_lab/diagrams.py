"""Structure diagrams drawn by code from the package's own numbers (``drawsvg``).

Where a structure or a process is the point (a chip inside an instance inside an UltraServer,
a ring all-reduce's steps, a restart timeline), a chapter draws it with one call here. Each
diagram is a small pure function that gathers its numbers from the package (``specs``,
``collectives``, ``reliability``, ``planning`` …) and a drawing function that lays them out;
no figure in a diagram is typed, so a diagram cannot disagree with the chapter's text.

Every diagram returns a :class:`Diagram`: it displays as inline SVG in a notebook (and as an
image with alt text on the static site), carries its text description (containing the word
"diagram") as the SVG's ``aria-label`` and ``<title>``, and shows a visible caption under the
drawing. Coordinates are rounded to 0.1 px and nothing depends on floating-point noise, so the
output is the same on every machine; it needs no network.

Examples
--------
>>> d = ring_allreduce(4)
>>> "diagram" in d.description.lower(), d.svg.startswith('<svg role="graphics-document"')
(True, True)
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from trainium_lab._validate import integer

__all__ = ["Diagram", "DIAGRAMS", "hierarchy", "logical_cores", "torus_placement", "bit_layouts", "hierarchical_allreduce", "tile_path", "ring_allreduce", "memory_stack",
           "restart_timeline", "bucket_lifecycle", "double_buffering",
           "kv_cache_growth", "moe_dispatch", "capstone_days"]

#: drawing width in px (fits JupyterLab's output column, tests/test_charts_scenegraph.py)
WIDTH = 760
FONT_PX = 11
CAPTION_PX = 12
LINE_PX = 15
#: Okabe-Ito hues, lightened so black text on them stays readable
FILLS = {"orange": "#f5c97a", "sky": "#a9d8f5", "green": "#8fd3bd", "yellow": "#f6ee9a",
         "blue": "#8bb9dd", "red": "#f0a98a", "pink": "#e8b5d3", "grey": "#d9d9d9", "white": "#ffffff"}
INK = "#222222"


@dataclass(frozen=True)
class Diagram:
    """A drawn diagram: SVG text, its description (alt text) and its visible caption."""

    name: str
    description: str
    caption: str
    svg: str

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"Diagram {self.name!r}: {self.description}"


def _r(v: float) -> float:
    """A coordinate rounded to 0.1 px (no float noise in stored outputs)."""
    out = round(float(v), 1)
    return int(out) if out == int(out) else out


def _text_px(text: str, size: float = FONT_PX, bold: bool = False) -> float:
    from trainium_lab.charts.base import text_width_px

    return text_width_px(text, size, bold)


def _wrap(text: str, width_px: float, size: float = FONT_PX) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        trial = f"{line} {w}".strip()
        if line and _text_px(trial, size) > width_px:
            lines.append(line)
            line = w
        else:
            line = trial
    return lines + ([line] if line else [])


class _Canvas:
    """A drawsvg drawing with rounded coordinates and the course's font."""

    def __init__(self, height: float, width: float = WIDTH):
        import drawsvg as dw

        self.dw = dw
        self.width, self.height = width, height
        self.items: list = []

    def rect(self, x, y, w, h, fill="white", stroke=INK, dash=None, width=1):
        kw = {"stroke_dasharray": dash} if dash else {}
        self.items.append(self.dw.Rectangle(_r(x), _r(y), _r(w), _r(h), fill=FILLS.get(fill, fill),
                                            stroke=stroke, stroke_width=width, **kw))

    def text(self, s, x, y, size=FONT_PX, anchor="start", bold=False, fill=INK):
        kw = {"font_weight": "bold"} if bold else {}
        # placed by a transform, as vl-convert places chart text (the checks read it that way)
        self.items.append(self.dw.Text(str(s), f"{size}px", 0, 0, transform=f"translate({_r(x)},{_r(y)})",
                                       text_anchor=anchor, fill=fill, **kw))

    def lines(self, texts, x, y, size=FONT_PX, anchor="start", bold=False):
        for i, s in enumerate(texts):
            self.text(s, x, y + i * (size + 3), size, anchor, bold)

    def arrow(self, x1, y1, x2, y2, colour=INK, width=1.5):
        self.items.append(self.dw.Line(_r(x1), _r(y1), _r(x2), _r(y2), stroke=colour, stroke_width=width))
        a = math.atan2(y2 - y1, x2 - x1)
        pts = [x2, y2]
        for da in (2.6, -2.6):
            pts += [x2 + 7 * math.cos(a + da), y2 + 7 * math.sin(a + da)]
        self.items.append(self.dw.Lines(*[_r(p) for p in pts], close=True, fill=colour, stroke="none"))

    def finish(self, name: str, description: str, caption: str) -> Diagram:
        return _finish(self, name, description, caption)


def _finish(c: _Canvas, name: str, description: str, caption: str) -> Diagram:
    """The one shared helper for every diagram's description and caption.

    ``description`` becomes the SVG's ``aria-label`` and ``<title>`` (the alt text on the site);
    ``caption`` is drawn under the drawing, starting "Diagram:", and stored as ``<desc>``.
    """
    if "diagram" not in description.lower():
        raise ValueError(f"description must say it is a diagram; got {description!r}")
    lines = _wrap(f"Diagram: {caption}", c.width - 20, CAPTION_PX)
    top = c.height + 8
    for i, line in enumerate(lines):
        c.text(line, 10, top + CAPTION_PX + i * (CAPTION_PX + 4), CAPTION_PX)
    height = _r(top + len(lines) * (CAPTION_PX + 4) + 8)
    d = c.dw.Drawing(c.width, height)
    for item in c.items:
        d.append(item)
    body = d.as_svg()
    body = body[body.index(">", body.index("<svg")) + 1: body.rindex("</svg>")]
    body = re.sub(r"<defs>\s*</defs>", "", body).strip()
    from trainium_lab.charts.base import FONT_FAMILY

    label = html.escape(description, quote=True)
    svg = (f'<svg role="graphics-document" aria-roledescription="visualization" aria-label="{label}" '
           f'xmlns="http://www.w3.org/2000/svg" width="{c.width}" height="{height}" '
           f'viewBox="0 0 {c.width} {height}" font-family="{FONT_FAMILY}" font-size="{FONT_PX}px">'
           f'<title>{label}</title><desc>{html.escape(caption)}</desc>'
           f'<rect x="0" y="0" width="{c.width}" height="{height}" fill="#ffffff" stroke="none" />'
           f"{body}</svg>")
    return Diagram(name, description, caption, svg)


def _fmt_s(seconds: float) -> str:
    from trainium_lab.units import format_seconds

    return format_seconds(seconds)


# --------------------------------------------------------------------------- 00 · the hierarchy


def hierarchy_numbers(chip: str = "trn2", instance: str = "trn2.48xlarge",
                      ultraserver: str = "trn2-ultraserver") -> dict:
    """Chip → instance → UltraServer counts and sizes, from :mod:`trainium_lab.specs`.

    >>> h = hierarchy_numbers()
    >>> h["instances_per_ultraserver"] * h["chips_per_instance"] == h["chips_per_ultraserver"]
    True
    """
    from trainium_lab import specs

    c, i, us = specs.chip(chip), specs.system(instance), specs.system(ultraserver)
    if us.n_chips % i.n_chips:
        raise ValueError(f"ultraserver must hold whole instances of {instance}; got {ultraserver!r}")
    return {"chip": c.name, "instance": i.name, "ultraserver": us.name, "cores_per_chip": c.neuron_cores,
            "hbm_bytes": c.hbm_bytes, "chips_per_instance": i.n_chips, "chips_per_ultraserver": us.n_chips,
            "instances_per_ultraserver": us.n_chips // i.n_chips}


def hierarchy(chip: str = "trn2", instance: str = "trn2.48xlarge",
              ultraserver: str = "trn2-ultraserver") -> Diagram:
    """Diagram: NeuronCores in a chip, chips in an instance, instances in an UltraServer."""
    from trainium_lab.units import GiB

    from trainium_lab import specs

    h = hierarchy_numbers(chip, instance, ultraserver)
    n_i, n_c = h["instances_per_ultraserver"], h["chips_per_instance"]
    side = math.ceil(math.sqrt(n_c))
    c = _Canvas(250)
    # the chip, enlarged, on the left
    c.lines([f"one {h['chip']} chip:", f"{h['cores_per_chip']} NeuronCores,", f"{h['hbm_bytes'] / GiB:g} GiB HBM"],
            10, 20, bold=True)
    c.rect(10, 60, 170, 150, "orange")
    cols = min(h["cores_per_chip"], 4)
    rows = math.ceil(h["cores_per_chip"] / cols)
    cw, chh = 150 / cols, min(40.0, 110 / rows)
    for k in range(h["cores_per_chip"]):
        c.rect(20 + (k % cols) * cw, 70 + (k // cols) * chh, cw - 6, chh - 6, "yellow")
        c.text(str(k), 20 + (k % cols) * cw + (cw - 6) / 2, 70 + (k // cols) * chh + chh / 2, size=9,
               anchor="middle")
    c.text("NeuronCores", 95, 200, anchor="middle")
    # the UltraServer: instances side by side, each a grid of chips
    box = 118
    x0 = 220
    c.text(f"one {h['ultraserver']}: {n_i} × {h['instance']} = {h['chips_per_ultraserver']} chips", x0, 28)
    for k in range(n_i):
        x = x0 + k * (box + 12)
        c.rect(x, 40, box, box + 22, "sky")
        c.text(f"instance {k + 1}: {n_c} chips", x + box / 2, 54, size=10, anchor="middle")
        cell = (box - 12) / side
        for j in range(n_c):
            c.rect(x + 6 + (j % side) * cell, 60 + (j // side) * cell, cell - 4, cell - 4, "orange", width=0.6)
    c.arrow(180, 120, x0 + 6, 72)
    from trainium_lab import topology
    from trainium_lab.units import format_bandwidth

    where = {"instance": "inside an instance", "ultraserver": "between its instances",
             "efa": "between UltraServers"}
    links = [f"{where[lv.name]}: {specs.link(lv.link_key).description.split(' ')[0]}, "
             f"{format_bandwidth(lv.bytes_per_s)} per chip"
             for lv in topology.cluster(ultraserver).levels if lv.name in where and lv.link_key]
    c.lines(links, x0, 205)
    return c.finish("hierarchy",
                    f"Diagram of the hierarchy: a {h['chip']} chip holds {h['cores_per_chip']} NeuronCores, a "
                    f"{h['instance']} instance {n_c} chips, a {h['ultraserver']} {n_i} instances "
                    f"({h['chips_per_ultraserver']} chips).",
                    f"{h['cores_per_chip']} NeuronCores per chip, {n_c} chips per {h['instance']}, {n_i} "
                    f"instances per UltraServer: {h['chips_per_ultraserver']} chips, numbers from data/.")


# --------------------------------------------------------------------------- 01 · logical cores


def logical_cores(system: str = "trn2.48xlarge", lnc: int | None = None) -> Diagram:
    """Diagram: one chip of ``system``, its physical NeuronCores grouped ``lnc`` at a time into
    logical cores (ranks), each with its share of the chip's HBM (:func:`cores.core_counts`)."""
    from trainium_lab import cores, specs
    from trainium_lab.units import GiB

    cc = cores.core_counts(system, lnc)
    chip = specs.chip(specs.system(system).chip_key)
    n_phys = cc.physical_cores // cc.n_chips
    n_log = n_phys // cc.lnc
    c = _Canvas(0)
    c.text(f"One {chip.name} chip of a {system} at LNC={cc.lnc}: {n_phys} physical NeuronCores = {n_log} "
           f"logical cores (ranks)", 10, 18, bold=True)
    w = (WIDTH - 20) / n_log
    for k in range(n_log):
        x = 10 + k * w
        c.rect(x + 2, 30, w - 4, 84, _GROUP_FILLS[k % len(_GROUP_FILLS)])
        c.text(f"rank {k}", x + w / 2, 46, anchor="middle", bold=True)
        pw = (w - 16) / cc.lnc
        for j in range(cc.lnc):
            c.rect(x + 8 + j * pw, 54, pw - 4, 26, "white", width=0.6)
            c.text(f"core {k * cc.lnc + j}", x + 8 + j * pw + (pw - 4) / 2, 71, size=9, anchor="middle")
        c.text(f"{cc.hbm_bytes_per_logical_core / GiB:g} GiB HBM", x + w / 2, 102, size=10, anchor="middle")
    c.rect(10, 122, WIDTH - 20, 24, "blue", width=0.6)
    c.text(f"HBM {chip.hbm_bytes / GiB:g} GiB, shared by the chip's {n_log} ranks", WIDTH / 2, 138,
           anchor="middle")
    c.text(f"{system}: {cc.n_chips} chips × {n_log} = {cc.ranks} ranks", 10, 166)
    c.height = 172
    return c.finish("logical_cores",
                    f"Diagram of one {chip.name} chip at LNC={cc.lnc}: {n_phys} physical NeuronCores grouped "
                    f"{cc.lnc} at a time into {n_log} logical cores, each a rank with "
                    f"{cc.hbm_bytes_per_logical_core / GiB:g} GiB of HBM.",
                    f"counts from cores.core_counts({system!r}, lnc={cc.lnc}); a rank is one logical core, so "
                    "TP and DP degrees count these, not chips.")


# --------------------------------------------------------------------------- 03 · torus and rings

#: group colours (the first eight lightened Okabe-Ito hues)
_GROUP_FILLS = ("orange", "sky", "green", "yellow", "blue", "red", "pink", "grey")


def torus_placement(tp: int = 64, pp: int = 4, dp: int = 2, *, system: str = "trn2-ultraserver",
                    lnc: int = 2, kind: str = "tp", ordering: str = "tp-pp-dp") -> Diagram:
    """Diagram: one system's instances, each a 2D torus of chips, joined by the UltraServer ring,
    with the chips coloured by the ``kind`` group their ranks belong to (``topology.place``)."""
    from trainium_lab import topology

    p = topology.place(tp=tp, pp=pp, dp=dp, system=system, lnc=lnc, ordering=ordering)
    if kind not in p.degrees:
        raise ValueError(f"kind must be one of {sorted(p.degrees)}; got {kind!r}")
    cl = p.cluster
    g = p.chip_groups(kind, 0)
    g = g[g.system == 0]
    side, n_inst = cl.grid_side, cl.instances_per_system
    if n_inst > 4 or side > 4:
        raise ValueError(f"system must have at most 4 instances of at most 4 × 4 chips to draw; got {system!r}")
    box, cell = 168, 34
    gap = (WIDTH - 20 - n_inst * box) / max(n_inst - 1, 1)
    c = _Canvas(0)
    c.text(f"TP{tp} × PP{pp} × DP{dp} ranks at LNC={lnc} on one {system}: colour = {kind.upper()} group",
           10, 18, bold=True)
    origin = {}
    for k in range(n_inst):
        x0 = 10 + k * (box + gap)
        c.rect(x0, 30, box, side * cell + 36, "white", stroke="#777777")
        c.text(f"instance {k}", x0 + box / 2, 46, anchor="middle")
        origin[k] = (x0 + (box - side * cell) / 2 + 4, 56)
        ox, oy = origin[k]
        for r in range(side):   # torus links, wrap-around drawn as arcs past the edge
            y = oy + r * cell + cell / 2 - 4
            c.items.append(c.dw.Line(_r(ox - 6), _r(y), _r(ox + side * cell - 2), _r(y), stroke="#999999"))
        for q in range(side):
            x = ox + q * cell + cell / 2 - 4
            c.items.append(c.dw.Line(_r(x), _r(oy - 6), _r(x), _r(oy + side * cell - 2), stroke="#999999"))
    for row in g.itertuples():
        ox, oy = origin[int(row.instance)]
        x, y = ox + row.col * cell, oy + row.row * cell
        fill = _GROUP_FILLS[int(row.group) % len(_GROUP_FILLS)]
        c.rect(x, y, cell - 8, cell - 8, fill, width=1.6 if row.highlighted else 0.6)
        c.text(str(int(row.group)), x + (cell - 8) / 2, y + (cell - 8) / 2 + 4, size=9, anchor="middle")
    # the UltraServer ring joins chip i of every instance; drawn for chip 0, below the boxes
    ys = 30 + side * cell + 36 + 16
    if n_inst > 1:
        xs = [origin[k][0] + (cell - 8) / 2 for k in range(n_inst)]
        c.items.append(c.dw.Line(_r(xs[0]), _r(ys), _r(xs[-1]), _r(ys), stroke="#d55e00",
                                 stroke_width=2, stroke_dasharray="5,3"))
        for x in xs:
            c.items.append(c.dw.Line(_r(x), _r(ys - 16), _r(x), _r(ys), stroke="#d55e00",
                                     stroke_width=1, stroke_dasharray="5,3"))
    notes = [f"grey lines: the {side} × {side} torus of each instance (wrap-around at the edges)",
             "dashed: the UltraServer ring joining chip 0 of every instance (each chip position has its own)",
             f"numbers: the {kind.upper()} group of each chip's ranks ({g.group.nunique()} groups in "
             f"this system; {cl.ranks_per_chip} ranks per chip at LNC={lnc})"]
    c.lines(notes, 10, ys + 20, size=10)
    c.height = ys + 20 + 3 * 13
    return c.finish("torus_placement",
                    f"Diagram of a {system}: {n_inst} instances, each a {side} by {side} torus of chips, joined "
                    f"by rings, with each chip coloured by the {kind.upper()} group of the TP{tp} × PP{pp} × "
                    f"DP{dp} job placed on it.",
                    f"rank placement from topology.place(tp={tp}, pp={pp}, dp={dp}, ordering={ordering!r}) at "
                    f"LNC={lnc}: which chips each {kind.upper()} group spans, and which links it crosses.")


# --------------------------------------------------------------------------- 02 · bit layouts


def bit_layouts(dtypes: tuple[str, ...] = ("float32", "bfloat16", "float8_e4m3fn", "float8_e5m2")) -> Diagram:
    """Diagram: sign, exponent and mantissa bits of each format, and an MX block's shared scale."""
    from trainium_lab import numerics

    infos = [numerics.format_info(d) for d in dtypes]
    unit = min(20.0, (WIDTH - 240) / max(i.bits for i in infos))
    c = _Canvas(60 + 34 * len(infos) + 90)
    x = 170.0
    for word, fill in (("sign", "red"), ("exponent", "sky"), ("mantissa", "green")):
        c.rect(x, 11, 12, 12, fill)
        c.text(word, x + 18, 21)
        x += 18 + _text_px(word) + 22
    c.text("(right: exponent + mantissa bits)", x, 21, size=10)
    for row, f in enumerate(infos):
        y = 40 + 34 * row
        c.text(f"{f.label} ({f.bits} bits)", 10, y + 16)
        kinds = ["red"] + ["sky"] * f.exponent_bits + ["green"] * f.mantissa_bits
        for b, fill in enumerate(kinds):
            c.rect(170 + b * unit, y, unit - 2, 22, fill, width=0.6)
        c.text(f"{f.exponent_bits} + {f.mantissa_bits}", 170 + f.bits * unit + 8, y + 16)
    y = 50 + 34 * len(infos)
    n = numerics.MX_BLOCK_SIZE
    e4 = numerics.format_info("float8_e4m3fn")
    c.text(f"An MX block: {n} {e4.label} values share one 8-bit power-of-two scale "
           f"({e4.bits + 8 / n:g} bits per value)", 10, y + 10, bold=True)
    cell = (WIDTH - 120) / n
    c.rect(10, y + 22, 70, 26, "yellow")
    c.text("scale 2^e", 45, y + 39, anchor="middle")
    for k in range(n):
        c.rect(100 + k * cell, y + 22, cell - 2, 26, "green", width=0.5)
    c.text(f"{n} values of {e4.bits} bits each", 100 + n * cell / 2, y + 66, anchor="middle")
    return c.finish("bit_layouts",
                    "Diagram of the bit layout of " + ", ".join(f.label for f in infos)
                    + f" (sign, exponent and mantissa bits), and of an MX block of {n} values sharing one scale.",
                    "in the format rows each box is one bit: the exponent sets the range, the mantissa the "
                    "precision; in the MX block each box is one value, and the block shares one exponent-only "
                    "scale. Numbers from trainium_lab.numerics.")


# --------------------------------------------------------------------------- 03 · ring all-reduce


def ring_allreduce(n: int = 4) -> Diagram:
    """Diagram: a ring all-reduce over ``n`` ranks, step by step (reduce-scatter, then all-gather).

    Each panel is one step: a row per rank, a cell per chunk holding how many ranks' data it
    sums (``n`` = done); the outlined cell is what the rank sends to the next rank.
    """
    from trainium_lab import collectives

    n = integer("n", n, minimum=2, maximum=6)
    steps = 2 * (n - 1)
    panels = steps + 1
    pw = (WIDTH - 20) / panels
    cell = min(22.0, (pw - 14) / n)
    c = _Canvas(70 + n * (cell + 4) + 30)
    for k in range(panels):
        df = collectives.ring_allreduce_steps(n, k)
        x0 = 10 + k * pw
        phase = "start" if k == 0 else ("reduce-scatter" if k <= n - 1 else "all-gather")
        c.text(f"after {k}" if k else "start", x0 + pw / 2 - 6, 22, size=10, anchor="middle", bold=True)
        c.text(phase if k else "", x0 + pw / 2 - 6, 36, size=9, anchor="middle")
        for row in df.itertuples():
            x, y = x0 + row.chunk * cell, 48 + row.rank * (cell + 4)
            done = row.contributions == n
            c.rect(x, y, cell - 2, cell, "green" if done else ("sky" if row.contributions > 1 else "white"),
                   stroke="#d55e00" if row.sending and k < panels - 1 else INK,
                   width=2.2 if row.sending and k < panels - 1 else 0.6)
            c.text(str(int(row.contributions)), x + (cell - 2) / 2, y + cell / 2 + 4, size=9, anchor="middle")
    y = 56 + n * (cell + 4)
    factor = collectives.bus_factor("all_reduce", n)
    c.text(f"{n} ranks, {steps} steps; each rank sends {factor:.2f} × the buffer (2(n−1)/n); rows: ranks, "
           "cells: chunks; a number = ranks summed; outlined = sent next", 10, y + 8, size=10)
    return c.finish("ring_allreduce",
                    f"Diagram of a ring all-reduce over {n} ranks, step by step: {n - 1} reduce-scatter steps "
                    f"then {n - 1} all-gather steps, each rank sending one chunk to its neighbour per step.",
                    f"the state after each step, from collectives.ring_allreduce_steps; green chunks are fully "
                    f"reduced (all {n} ranks' data).")


def hierarchical_phases(size_bytes: float, levels) -> list[dict]:
    """The phases of a hierarchical all-reduce (:func:`collectives.hierarchical_allreduce_s`):
    reduce-scatter inward, all-reduce at the outermost level, all-gather back out; each with its
    level index, participants, bytes per participant and seconds. ``levels`` as there:
    ``(n, bandwidth_bytes_per_s[, latency_s])``, innermost first.

    >>> ph = hierarchical_phases(1e9, [(4, 4e9), (2, 1e9)])
    >>> [p["phase"] for p in ph], round(sum(p["seconds"] for p in ph), 4)
    (['reduce-scatter', 'all-reduce', 'all-gather'], 0.625)
    """
    from trainium_lab import collectives

    levels = list(levels)
    total = collectives.hierarchical_allreduce_s(size_bytes, levels)  # validates the input
    down, up, size = [], [], float(size_bytes)
    for i, lv in enumerate(levels):
        n, b, a = lv[0], lv[1], (lv[2] if len(lv) == 3 else 0.0)
        if i == len(levels) - 1:
            down.append({"phase": "all-reduce", "level": i, "n": n, "size_bytes": size,
                         "seconds": collectives.ring_allreduce_s(size, n, b, a)})
        else:
            down.append({"phase": "reduce-scatter", "level": i, "n": n, "size_bytes": size,
                         "seconds": collectives.ring_reduce_scatter_s(size, n, b, a)})
            up.insert(0, {"phase": "all-gather", "level": i, "n": n, "size_bytes": size,
                          "seconds": collectives.ring_allgather_s(size, n, b, a)})
            size /= n
    phases = down + up
    assert math.isclose(sum(p["seconds"] for p in phases), total, rel_tol=1e-9)
    return phases


def hierarchical_allreduce(size_bytes: float = 1e9, *, system: str = "trn2.48xlarge", n_systems: int = 4,
                           inner: str = "trn2-neuronlink-intra", outer: str = "trn2-efa") -> Diagram:
    """Diagram: a hierarchical all-reduce over ``n_systems`` instances, phase by phase and to
    scale: reduce-scatter on the fast inner links, an all-reduce of the shard over the slow
    outer ones, all-gather back."""
    from trainium_lab import specs
    from trainium_lab.units import GB, format_bytes

    n_in = specs.system(system).n_chips
    n_systems = integer("n_systems", n_systems, minimum=2, maximum=1024)
    li, lo = specs.link(inner), specs.link(outer)
    levels = [(n_in, li.bytes_per_s) + ((li.latency_s,) if li.latency_s else ()),
              (n_systems, lo.bytes_per_s) + ((lo.latency_s,) if lo.latency_s else ())]
    phases = hierarchical_phases(size_bytes, levels)
    total = sum(p["seconds"] for p in phases)
    from trainium_lab import collectives

    flat = collectives.ring_allreduce_s(size_bytes, n_in * n_systems, lo.bytes_per_s,
                                        lo.latency_s or 0.0)
    short = {k: link.description.split(" ")[0] for k, link in (("in", li), ("out", lo))}  # "NeuronLink-v3"
    names = {0: f"inside each {system} over {short['in']} ({n_in} chips, {li.bytes_per_s / GB:,.0f} GB/s per chip)",
             1: f"across {n_systems} instances over {short['out']} ({lo.bytes_per_s / GB:,.0f} GB/s per chip)"}
    fills = {"reduce-scatter": "sky", "all-reduce": "red", "all-gather": "green"}
    c = _Canvas(0)
    c.text(f"All-reduce of {format_bytes(size_bytes, binary=False)} per chip over {n_in * n_systems} chips: "
           f"{_fmt_s(total)} hierarchical, {_fmt_s(flat)} as one flat ring at the outer level's speed", 10, 18,
           bold=True)
    x0, scale = 10, (WIDTH - 20) / total
    x = x0
    for k, ph in enumerate(phases):
        w = ph["seconds"] * scale
        c.rect(x, 30, max(w, 1.5), 28, fills[ph["phase"]], width=0.6)
        x += w
    y = 80
    for k, ph in enumerate(phases):
        c.rect(10, y - 10, 12, 12, fills[ph["phase"]], width=0.6)
        c.text(f"{k + 1}. {ph['phase']} {names[ph['level']]}: {format_bytes(ph['size_bytes'], binary=False)} "
               "per chip, "
               f"{_fmt_s(ph['seconds'])}", 28, y)
        y += 18
    c.height = y
    return c.finish("hierarchical_allreduce",
                    f"Diagram of a hierarchical all-reduce over {n_systems} instances, to scale: reduce-scatter "
                    "inside each instance, an all-reduce of one shard per chip across instances, then all-gather "
                    "inside again.",
                    "phase times from collectives.ring_reduce_scatter_s, ring_allreduce_s and ring_allgather_s; "
                    "their sum is collectives.hierarchical_allreduce_s. The slow level carries 1/"
                    f"{n_in} of the bytes.")


# --------------------------------------------------------------------------- 04 · memory stack


def memory_stack(model: str = "llama3-70b", chip: str = "trn2", recipe: str = "bf16-adam") -> Diagram:
    """Diagram: a model's training state by part, against chips of HBM (whole HBM, and with the
    share :func:`sizing.min_chips_for_state` keeps free for activations)."""
    from trainium_lab import sizing, specs
    from trainium_lab.units import GB, GiB

    p, r, ch = sizing.preset(model), sizing.recipe(recipe), specs.chip(chip)
    parts = [("weights", r.weights, "orange"), ("gradients", r.gradients, "red"),
             ("FP32 master", r.master, "sky"), ("Adam m", r.adam_m, "green"), ("Adam v", r.adam_v, "blue")]
    per_param = sum(b for _, b, _ in parts)
    state = sizing.training_state_bytes(p.n_params, per_param)
    whole = math.ceil(state / ch.hbm_bytes)
    kept = sizing.min_chips_for_state(state, chip)
    c = _Canvas(190)
    scale = (WIDTH - 40) / (max(whole, kept) * ch.hbm_bytes)
    x = 20
    c.text(f"{p.name}: {per_param:g} B per parameter × {p.n_params / 1e9:,.0f}B = {state / GB:,.0f} GB of "
           "training state", 20, 22, bold=True)
    for name, b, fill in parts:
        w = b * p.n_params * scale
        c.rect(x, 34, w, 40, fill)
        c.text(name, x + w / 2, 52, anchor="middle", size=10)
        c.text(f"{b:g} B", x + w / 2, 66, anchor="middle", size=10)
        x += w
    for row, (n, what) in enumerate(((whole, "filling the whole HBM"),
                                     (kept, "keeping room for activations (sizing.min_chips_for_state)"))):
        y = 96 + row * 44
        for k in range(n):
            c.rect(20 + k * ch.hbm_bytes * scale, y, ch.hbm_bytes * scale - 2, 20, "grey", width=0.6)
        c.text(f"{n} chips {what}", 20, y + 34)
    return c.finish("memory_stack",
                    f"Diagram of {p.name}'s training state: {per_param:g} bytes per parameter in five parts, "
                    f"{state / GB:,.0f} GB, against {chip} chips of HBM: {whole} chips filling the whole HBM, {kept} with room "
                    "for activations.",
                    f"the state's parts to scale against chips of {ch.hbm_bytes / GiB:g} GiB ({ch.hbm_bytes / GB:,.0f} GB); {whole} chips is "
                    f"the whole-HBM count, {kept} the count that keeps activation room, both computed by "
                    "trainium_lab.sizing.")


# --------------------------------------------------------------------------- 06 · restart timeline


def restart_timeline(recoveries) -> Diagram:
    """Diagram: detect → replace → load → compile, one bar per recovery policy (a list of
    :class:`reliability.Recovery`, as chapter 06 computes them), to scale."""
    from trainium_lab import reliability

    recs = list(recoveries) if not isinstance(recoveries, reliability.Recovery) else [recoveries]
    if not recs or not all(isinstance(r, reliability.Recovery) for r in recs):
        raise ValueError("recoveries must be reliability.Recovery objects (reliability.resume_recovery)")
    longest = max(r.total_s for r in recs)
    if longest <= 0:
        raise ValueError("recoveries must take some time; every part is 0 s")
    fills = {"detect": "red", "replace": "orange", "load": "sky", "compile": "green"}
    c = _Canvas(40 + 46 * len(recs) + 10)
    x0 = 170
    scale = (WIDTH - x0 - 90) / longest
    for k, (part, fill) in enumerate(fills.items()):
        c.rect(x0 + k * 110, 12, 12, 12, fill)
        c.text(part, x0 + k * 110 + 18, 22)
    for row, r in enumerate(recs):
        y = 40 + row * 46
        c.text(r.policy, 10, y + 16)
        x = x0
        for part, secs in r.parts().items():
            w = secs * scale
            if w > 0:
                c.rect(x, y, w, 22, fills[part], width=0.6)
            x += w
        c.text(f"R = {_fmt_s(r.total_s)}", x + 6, y + 16)
        big = max(r.parts().items(), key=lambda kv: kv[1])
        c.text(f"mostly {big[0]}: {_fmt_s(big[1])}", x0, y + 36, size=10)
    return c.finish("restart_timeline",
                    "Diagram of the restart timeline after a failure: detect, replace, load the checkpoint, "
                    "compile, one bar per recovery policy, to scale.",
                    "each bar is reliability.resume_recovery's expected restart time R by part, for the "
                    "chapter's assumed inputs.")


# --------------------------------------------------------------------------- 07 · buckets


def bucket_lifecycle(lengths: tuple[int, ...] = (37, 100, 130, 300, 90, 500),
                     buckets: tuple[int, ...] | None = None) -> Diagram:
    """Diagram: requests padded to buckets, one graph (cache key, NEFF) per bucket: the first
    request of a bucket compiles, later ones hit the cache."""
    from trainium_lab import compilation

    buckets = tuple(integer("buckets", b, minimum=1, maximum=1_000_000)
                    for b in (buckets or compilation.power_of_two_buckets(512, 4)))
    lengths = tuple(integer("lengths", v, minimum=1, maximum=max(buckets)) for v in lengths)
    if not 1 <= len(lengths) <= 8:
        raise ValueError(f"lengths must hold 1 to 8 lengths for the drawing; got {len(lengths)}")
    picked = [compilation.pick_bucket(n, buckets) for n in lengths]
    c = _Canvas(40 + 30 * len(lengths) + 20)
    c.text("request (tokens)", 10, 20, bold=True)
    c.text("padded to bucket", 250, 20, bold=True)
    c.text("graph → cache", 510, 20, bold=True)
    seen: set[int] = set()
    for k, (n, b) in enumerate(zip(lengths, picked)):
        y = 32 + 30 * k
        full = 165 * n / max(buckets)
        c.rect(10, y, full, 20, "sky", width=0.6)
        c.text(f"{n}", 14 + full, y + 14)
        c.arrow(212, y + 10, 245, y + 10)
        c.rect(250, y, 165 * b / max(buckets), 20, "grey", width=0.6)
        c.rect(250, y, 165 * n / max(buckets), 20, "sky", width=0.6)
        c.text(f"{b} (pad {1 - n / b:.0%})", 254 + 165 * b / max(buckets), y + 14, size=10)
        hit = b in seen
        seen.add(b)
        c.text(f"bucket {b}: " + ("cache hit, load NEFF" if hit else "miss: compile a NEFF, cache it"),
               510, y + 14, size=10)
    c.text(f"buckets {', '.join(map(str, buckets))}: {len(set(picked))} NEFFs for {len(lengths)} requests; "
           f"padding {compilation.padding_fraction(list(lengths), list(buckets)):.0%} of the padded tokens",
           10, 40 + 30 * len(lengths) + 12, size=10)
    return c.finish("bucket_lifecycle",
                    "Diagram of the compile and bucket life cycle: each request is padded to the smallest bucket "
                    "that holds it; the first request of a bucket compiles a NEFF, later ones load it from the "
                    "cache.",
                    "buckets from compilation.power_of_two_buckets, the pick and the padding from "
                    "compilation.pick_bucket and compilation.padding_fraction.")


def tile_path(chip: str = "trn2") -> Diagram:
    """Diagram: a tile's path through one NeuronCore's memories, HBM → SBUF → tensor engine →
    PSUM → SBUF → HBM, labelled with the capacities and rates of :func:`kernels.memory_hierarchy`."""
    from trainium_lab import kernels
    from trainium_lab.units import GB, GiB, KiB, MiB

    core = kernels.core_model(chip)
    m = kernels.memory_hierarchy(chip).set_index("space")
    hbm, sbuf, psum = m.loc["hbm"], m.loc["sbuf"], m.loc["psum"]
    banks = psum.capacity_bytes / (core.partitions * core.psum_tile_fmax * 4)
    c = _Canvas(0)
    w, step = 150, 196
    boxes = [
        ("HBM", [f"{hbm.capacity_bytes / GiB:g} GiB per chip", f"{hbm.fill_bytes_per_s / GB:,.0f} GB/s",
                 f"shared by {int(hbm.cores_sharing)} cores"], "blue"),
        ("SBUF", [f"{sbuf.capacity_bytes / MiB:g} MiB, {int(sbuf.partitions)} partitions",
                  f"{sbuf.bytes_per_partition / KiB:g} KiB per partition", "software-managed"], "sky"),
        ("tensor engine", [f"{core.tensor_rows} × {core.tensor_rows} systolic array",
                           f"stationary ≤ {core.stationary_fmax} columns", f"moving ≤ {core.psum_tile_fmax}"],
         "orange"),
        ("PSUM", [f"{psum.capacity_bytes / MiB:g} MiB, {banks:.0f} banks", f"{core.partitions} × "
                  f"{core.psum_tile_fmax} FP32 each", "matmul accumulators"], "green"),
    ]
    for k, (name, lines, fill) in enumerate(boxes):
        x = 10 + k * step
        c.rect(x, 20, w, 80, fill)
        c.text(name, x + w / 2, 38, anchor="middle", bold=True)
        c.lines(lines, x + w / 2, 56, size=10, anchor="middle")
    for k, words in enumerate((["DMA", "in"], ["operands"], ["partial", "sums"])):
        x = 10 + k * step + w
        c.lines(words, x + (step - w) / 2, 50 - 12 * len(words) + 4, size=9, anchor="middle")
        c.arrow(x + 2, 56, x + step - w - 2, 56)
    # the result leaves PSUM through the vector or scalar engine into SBUF, then DMA out to HBM
    px, sx, hx = 10 + 3 * step + w / 2, 10 + step + w / 2 + 30, 10 + w / 2
    c.items.append(c.dw.Line(_r(px), 100, _r(px), 150, stroke=INK, stroke_width=1.5))
    c.items.append(c.dw.Line(_r(px), 150, _r(sx), 150, stroke=INK, stroke_width=1.5))
    c.arrow(sx, 150, sx, 102)
    c.text("copy out through the vector or scalar engine", (px + sx) / 2, 166, size=10, anchor="middle")
    c.items.append(c.dw.Line(_r(sx - 60), 100, _r(sx - 60), 185, stroke=INK, stroke_width=1.5))
    c.items.append(c.dw.Line(_r(sx - 60), 185, _r(hx), 185, stroke=INK, stroke_width=1.5))
    c.arrow(hx, 185, hx, 102)
    c.text("DMA out", (hx + sx - 60) / 2, 200, size=10, anchor="middle")
    c.height = 208
    return c.finish("tile_path",
                    f"Diagram of a tile's path through one {core.core}: HBM to SBUF by DMA, SBUF to the tensor "
                    "engine, partial sums into PSUM, out through the vector or scalar engine to SBUF and back "
                    "to HBM.",
                    f"capacities and rates from kernels.memory_hierarchy({chip!r}) and kernels.core_model; "
                    "PSUM banks = PSUM ÷ (partitions × 512 × 4 B).")


# --------------------------------------------------------------------------- 08 · double buffering


def double_buffering(n_tiles: int = 4, buffers: tuple[int, ...] = (1, 3), chip: str = "trn2") -> Diagram:
    """Diagram: HBM → SBUF → HBM tiles of an element-wise exp on the DMA and scalar engines,
    one timeline per buffer count, from the kernel emulator (:func:`kernels.elementwise`)."""
    import numpy as np

    from trainium_lab import kernels

    n_tiles = integer("n_tiles", n_tiles, minimum=1, maximum=8)
    core = kernels.core_model(chip)
    x = np.zeros((n_tiles * core.partitions, 2048))
    runs = {b: kernels.elementwise(x, "exp", buffers=integer("buffers", b, minimum=1, maximum=4), chip=chip)
            for b in buffers}
    longest = max(r.time_s for r in runs.values())
    lanes = [("dma_load", "HBM → SBUF (DMA)", "sky"), ("scalar", "exp (scalar engine)", "orange"),
             ("dma_store", "SBUF → HBM (DMA)", "green")]
    x0 = 150
    scale = (WIDTH - x0 - 20) / longest
    c = _Canvas(30 + len(runs) * (len(lanes) * 24 + 40))
    y = 20
    for b, run in runs.items():
        c.text(f"{b} buffer{'s' if b > 1 else ''}: {_fmt_s(run.time_s)}", 10, y + 4, bold=True)
        y += 14
        t = run.timeline
        for engine, label, fill in lanes:
            c.text(label, 10, y + 15, size=10)
            rows = t[t.engine == engine].reset_index(drop=True)
            for k, r in rows.iterrows():
                w = max((r.end_s - r.start_s) * scale, 1.5)
                c.rect(x0 + r.start_s * scale, y, w, 20, fill, width=0.5)
                if w > 16:
                    c.text(str(k), x0 + r.start_s * scale + w / 2, y + 14, size=9, anchor="middle")
            y += 24
        y += 20
    return c.finish("double_buffering",
                    f"Diagram of {n_tiles} tiles moving HBM to SBUF, through the scalar engine and back, on a "
                    f"timeline: with one buffer each stage waits for the last; with more buffers the loads, "
                    "exps and stores overlap.",
                    "each box is one tile's transfer or exp, times from the kernel emulator "
                    "(kernels.elementwise); numbers in boxes are tile indices.")


# --------------------------------------------------------------------------- 09 · decode and KV


def kv_cache_growth(model: str = "llama3-70b", chip: str = "trn2", tp: int = 8, batch: int = 1,
                    context_lens: tuple[int, ...] = (512, 2048, 8192, 32768)) -> Diagram:
    """Diagram: a decode step's time split (weights, KV cache, TP collectives) as the context
    grows, and the KV cache's bytes, from :func:`serving.decode_step`."""
    from trainium_lab import serving
    from trainium_lab.units import GB

    r = serving.replica(model, chip, tp=tp)
    steps = [serving.decode_step(r, batch, integer("context_lens", n, minimum=1, maximum=1_000_000))
             for n in context_lens]
    longest = max(s.expected_s for s in steps)
    x0 = 120
    scale = (WIDTH - x0 - 130) / longest
    c = _Canvas(44 + 40 * len(steps))
    legend = [("weights", "orange"), ("KV cache", "sky"), ("TP collectives", "red")]
    for k, (name, fill) in enumerate(legend):
        c.rect(x0 + k * 130, 10, 12, 12, fill)
        c.text(name, x0 + k * 130 + 18, 20)
    for row, (n, s) in enumerate(zip(context_lens, steps)):
        y = 34 + 40 * row
        c.text(f"{n:,} tokens", 10, y + 15)
        x = x0
        for secs, fill in ((s.weight_s, "orange"), (s.attention_s, "sky"), (s.comm_s, "red")):
            c.rect(x, y, secs * scale, 22, fill, width=0.5)
            x += secs * scale
        c.text(f"{_fmt_s(s.expected_s)}; KV {s.kv_bytes / GB:,.2f} GB", x + 6, y + 15, size=10)
    return c.finish("kv_cache_growth",
                    f"Diagram of a decode step's time for {r.model.name if hasattr(r.model, 'name') else model} "
                    f"on {chip} at TP {tp}: reading the weights, reading the KV cache, and the TP collectives, "
                    "as the context grows.",
                    "bars to scale from serving.decode_step: weight reads, KV-cache reads (attention) and the TP "
                    "all-reduces of the expected step time; the KV cache grows with every token in context.")


# --------------------------------------------------------------------------- 10 · MoE dispatch


def moe_dispatch(n: int = 4, tokens_per_chip: int = 8192, d_model: int = 4096, experts_per_token: int = 2) -> Diagram:
    """Diagram: all-gather dispatch (every chip receives every token) against all-to-all(-v)
    dispatch (each token goes only to its experts' chips), bytes per chip from :mod:`moe`."""
    from trainium_lab import moe
    from trainium_lab.units import MiB

    n = integer("n", n, minimum=2, maximum=8)
    tokens_per_chip = integer("tokens_per_chip", tokens_per_chip, minimum=1, maximum=10_000_000)
    d_model = integer("d_model", d_model, minimum=1, maximum=1_000_000)
    experts_per_token = integer("experts_per_token", experts_per_token, minimum=1, maximum=n - 1)
    # both as bytes one chip receives from the others (the share routed to its own experts stays put)
    a2a = moe.ep_exchange_bytes(tokens_per_chip, d_model, experts_per_token, n, method="all-to-all-v")
    gather = moe.ep_exchange_bytes(tokens_per_chip, d_model, experts_per_token, n, method="all-gather")
    c = _Canvas(262)
    for panel, (title, sub, all_pairs) in enumerate((
            ("all-gather dispatch (reduce-scatter to combine)", f"each chip receives {gather / MiB:,.0f} MiB", True),
            ("all-to-all-v dispatch", f"each chip receives {a2a / MiB:,.0f} MiB", False))):
        cx, cy, rad = 190 + panel * 380, 142, 80
        c.text(title, cx, 20, anchor="middle", bold=True)
        c.text(sub, cx, 36, anchor="middle")
        pts = [(cx + rad * math.cos(2 * math.pi * k / n - math.pi / 2),
                cy + rad * math.sin(2 * math.pi * k / n - math.pi / 2)) for k in range(n)]
        for i, (xi, yi) in enumerate(pts):
            targets = [j for j in range(n) if j != i] if all_pairs else [(i + 1 + k) % n for k in
                                                                          range(min(experts_per_token, n - 1))]
            for j in targets:
                xj, yj = pts[j]
                d = math.hypot(xj - xi, yj - yi)
                ux, uy = (xj - xi) / d, (yj - yi) / d
                off = 4 if all_pairs else 0
                c.arrow(xi + ux * 22 - uy * off, yi + uy * 22 + ux * off, xj - ux * 22 - uy * off,
                        yj - uy * 22 + ux * off, colour="#0072b2" if all_pairs else "#d55e00", width=1)
        for i, (xi, yi) in enumerate(pts):
            c.rect(xi - 18, yi - 12, 36, 24, "yellow")
            c.text(f"chip {i}", xi, yi + 4, size=9, anchor="middle")
    c.text(f"{tokens_per_chip:,} tokens per chip, d_model {d_model:,}, top-{experts_per_token}, BF16", 10, 256,
           size=10)
    return c.finish("moe_dispatch",
                    f"Diagram of MoE dispatch over {n} chips: an all-gather sends every token to every chip, "
                    f"an all-to-all sends each token only to the chips of its {experts_per_token} experts.",
                    "bytes received per chip from moe.ep_exchange_bytes: (n − 1)/n · T · k · h · 2 B for the "
                    "all-to-all-v, (n − 1) · T · h · 2 B for the all-gather, a ratio of n/k.")


# --------------------------------------------------------------------------- 11 · capstone


def capstone_days(plan=None) -> Diagram:
    """Diagram: where the days of chapter 11's 405B plan go (training steps, checkpoint writes,
    rework after failures, restarts, compiles), from the plan's ``wall_time_table()``."""
    from trainium_lab import planning

    plan = planning.capstone_405b_plan() if plan is None else plan
    if not isinstance(plan, planning.RunPlan):
        raise ValueError(f"plan must be a planning.RunPlan (planning.plan_run); got {type(plan).__name__}")
    t = plan.wall_time_table()
    t = t[t.days > 0].reset_index(drop=True)
    total = float(t.days.sum())
    fills = ["sky", "orange", "red", "pink", "green", "yellow"]
    c = _Canvas(120)
    c.text(f"{plan.model.name}: {plan.n_chips:,} chips, {total:.1f} days; "
           f"{plan.results['lost_fraction']:.1%} lost to checkpoints, rework and restarts", 10, 20, bold=True)
    scale = (WIDTH - 20) / total
    x, lx, ly = 10, 10, 92
    for k, r in t.iterrows():
        w = r.days * scale
        fill = fills[k % len(fills)]
        c.rect(x, 34, w, 34, fill, width=0.6)
        x += w
        label = f"{r.part}: {r.days:.1f} d ({r.share:.1%})"
        if lx + 18 + _text_px(label) > WIDTH - 10:
            lx, ly = 10, ly + 20
        c.rect(lx, ly - 10, 12, 12, fill, width=0.6)
        c.text(label, lx + 18, ly)
        lx += 18 + _text_px(label) + 24
    c.height = ly + 10
    return c.finish("capstone_days",
                    f"Diagram of where the {total:.1f} days of the capstone's {plan.model.name} plan go: "
                    "training steps, checkpoint writes, rework after failures and restarts, to scale.",
                    "one bar to scale, from planning.capstone_405b_plan().wall_time_table(): the plan chapter "
                    "11 prints, with checkpoints written at 10 GB/s.")


#: chapter -> the diagrams drawn for it (05 already draws a tensor-parallel block and a pipeline
#: schedule with Altair; 01 a NeuronCore, to which logical_cores adds the rank)
DIAGRAMS = {"00": ("hierarchy",), "01": ("logical_cores",), "02": ("bit_layouts",), "03": ("torus_placement", "ring_allreduce", "hierarchical_allreduce"),
            "04": ("memory_stack",), "06": ("restart_timeline",), "07": ("bucket_lifecycle",),
            "08": ("tile_path", "double_buffering"), "09": ("kv_cache_growth",), "10": ("moe_dispatch",),
            "11": ("capstone_days",)}
