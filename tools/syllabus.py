#!/usr/bin/env python3
"""Generate ``docs/syllabus.md`` from the chapters: prerequisites, learning goals, estimated
time, a week-by-week plan, and which exercises suit homework and which suit class.

    python tools/syllabus.py          # rewrite docs/syllabus.md
    python tools/syllabus.py --check  # exit 1 if it is out of date (tests/test_syllabus.py)

Everything on the page is read from ``notebooks/NN_*.ipynb`` and the exercises' names from
``trainium_lab/exercises/chNN.py``; the time estimate is a stated formula with its assumptions
(``READING_WORDS_PER_MIN`` and the minutes per code cell and per exercise) printed on the page,
so an instructor can see where each figure comes from and adjust it.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "syllabus.md"
NOTEBOOKS = ROOT / "notebooks"
#: words of prose per minute when studying (not skimming) technical text: half the 238 words/min
#: Brysbaert (2019) measured for silent reading of English non-fiction, for formulas and checks
READING_WORDS_PER_MIN = 119
#: minutes per code cell (read it, run it, look at its output)
MIN_PER_CODE_CELL = 1.0
#: minutes per exercise (one calculation or one short explanation)
MIN_PER_EXERCISE = 8.0
#: estimates are rounded up to this many minutes (a planning figure: a few words more or less
#: in a chapter do not change it)
ROUND_MIN = 15
#: weeks of the suggested plan: the chapters, shortest neighbours merged until they fit
WEEKS = 11
#: exercise kinds (the label after Q1, Q2, ... in a chapter) that suit a class: they ask for a
#: prediction or a diagnosis to compare out loud before the reveal
CLASS_KINDS = ("predict", "which")
CHECK = re.compile(r"^(ch\d\d)\.(q\w+)\.check\(", re.M)
QUESTION = re.compile(r"\*\*Q(\d+)(?:\s*\(([^)]*)\))?\.?\*\*")
CHAPTER_REF = re.compile(r"(?i)\bchapters?\s+((?:\d\d(?:\s*(?:,|and|&|–|-)\s*)?)+)")


@dataclass(frozen=True)
class Chapter:
    stem: str
    title: str
    subtitle: str
    goals: tuple[str, ...]
    prerequisites: tuple[str, ...]
    minutes: int
    exercises: tuple[tuple[str, str, str], ...]  # (label, kind, exercise name)


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _oneline(text: str) -> str:
    return " ".join(text.split())


def read_chapter(path: Path) -> Chapter:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb["cells"]
    md = [_text(c) for c in cells if c["cell_type"] == "markdown"]
    head = next(m for m in md if re.search(r"^# ", m, re.M))
    title = re.search(r"^# (.+)$", head, re.M).group(1).strip()
    sub = re.search(r"^\*(.+?)\*\s*$", head[head.index(title):], re.M | re.S)
    subtitle = _oneline(sub.group(1)) if sub else ""
    goals_block = head.split("**Learning goals**", 1)[1] if "**Learning goals**" in head else ""
    goals, current = [], None
    for line in goals_block.splitlines():
        if line.startswith("- "):
            current = [line[2:]]
            goals.append(current)
        elif current is not None and line.startswith("  ") and line.strip():
            current.append(line.strip())
        elif current is not None:
            current = None
            if line.strip():
                break
    number = path.name[:2]
    refs = set()
    for m in md:
        for group in CHAPTER_REF.findall(m):
            refs.update(re.findall(r"\d\d", group))
        refs.update(re.findall(r"\]\((\d\d)_[a-z_]+\.ipynb", m))
    earlier = sorted(r for r in refs if r < number)
    if number != "00" and "00" not in earlier:
        earlier.insert(0, "00")
    # exercises: the question labels in the markdown, in order, and the Exercise objects named
    # by the check cells, in order
    kinds = {f"q{q}": (kind or "").strip() for m in md for q, kind in QUESTION.findall(m)}
    checks = [CHECK.search(_text(c)).groups() for c in cells
              if c["cell_type"] == "code" and CHECK.search(_text(c))]
    exercises = tuple((q.upper(), kinds.get(q, ""),
                       getattr(importlib.import_module(f"trainium_lab.exercises.{mod}"), q).name)
                      for mod, q in checks)
    words = sum(len(re.sub(r"<[^>]+>|\$[^$]*\$", " ", m).split()) for m in md)
    n_code = sum(c["cell_type"] == "code" for c in cells)
    minutes = (words / READING_WORDS_PER_MIN + n_code * MIN_PER_CODE_CELL
               + len(checks) * MIN_PER_EXERCISE)
    return Chapter(path.stem, title, subtitle, tuple(_oneline(" ".join(g)) for g in goals),
                   tuple(earlier), int(ROUND_MIN * math.ceil(minutes / ROUND_MIN)), exercises)


def chapters() -> list[Chapter]:
    return [read_chapter(p) for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))]


def plan(chs: list[Chapter], weeks: int = WEEKS) -> list[list[Chapter]]:
    """Consecutive chapters grouped into ``weeks`` weeks: merge the shortest neighbouring pair
    until the count fits (the order, and so every prerequisite, is kept)."""
    groups = [[c] for c in chs]
    while len(groups) > weeks:
        i = min(range(len(groups) - 1),
                key=lambda k: sum(c.minutes for c in groups[k] + groups[k + 1]))
        groups[i:i + 2] = [groups[i] + groups[i + 1]]
    return groups


def suits_class(kind: str) -> bool:
    return kind.lower().startswith(CLASS_KINDS)


def _hours(minutes: float) -> str:
    return f"{minutes / 60:g} h"


def link(stem: str) -> str:
    return f"[{stem[:2]}](../notebooks/{stem}.ipynb)"


def render() -> str:
    chs = chapters()
    total = sum(c.minutes for c in chs)
    out = ["# Syllabus",
           "",
           "<!-- generated by tools/syllabus.py from the chapters: do not edit by hand -->",
           "",
           f"Trainium Lab as a course: {len(chs)} chapters, about {_hours(total)} of study in all "
           f"(estimate below), planned over {WEEKS} weeks. The instructor edition "
           "(`python3 tools/course.py instructor OUT/`) turns every chapter into an nbgrader "
           "assignment.",
           "",
           "**Before the course:** Python and NumPy at the level of reading and changing short "
           "functions; first-year algebra; what a neural network's forward and backward pass "
           "are. No AWS account or Trainium hardware is needed: every chapter runs on a laptop.",
           "",
           "**How the time is estimated:** prose words ÷ "
           f"{READING_WORDS_PER_MIN} words per minute (half the 238 words/min measured for "
           "silent reading of non-fiction, Brysbaert 2019, *J. Memory and Language* 109, 104047, "
           "for formulas and checking), plus "
           f"{MIN_PER_CODE_CELL:g} min per code cell and {MIN_PER_EXERCISE:g} min per exercise, "
           f"rounded up to {ROUND_MIN} min. It is a planning figure, not a measurement of learners.",
           "",
           "**Homework or class:** *predict, then reveal* and *which cause?* exercises suit class: "
           "everyone commits to a prediction or a diagnosis, then compares before the reveal. The "
           "others (calculations, *explain why*, *design*, completing a kernel) suit homework, and "
           "they are the ones the nbgrader edition grades best.",
           "",
           "## Week by week",
           "",
           "| week | chapters | estimated time |",
           "|---|---|---|"]
    for week, group in enumerate(plan(chs), start=1):
        names = "; ".join(f"{link(c.stem)} {c.title.split('·', 1)[-1].strip()}" for c in group)
        out.append(f"| {week} | {names} | {_hours(sum(c.minutes for c in group))} |")
    out += ["", "## Chapters", ""]
    for c in chs:
        out += [f"### {link(c.stem)} · {c.title.split('·', 1)[-1].strip()}", ""]
        if c.subtitle:
            out += [f"*{c.subtitle}*", ""]
        pre = ", ".join(link(next(x.stem for x in chs if x.stem[:2] == p)) for p in c.prerequisites)
        out += [f"- **Prerequisites:** {pre or 'none'}",
                f"- **Estimated time:** {_hours(c.minutes)}",
                "- **Learning goals:**"]
        out += [f"  - {g}" for g in c.goals]
        in_class = [f"{label} ({name.split(' ', 1)[-1]})" for label, kind, name in c.exercises
                    if suits_class(kind)]
        homework = [f"{label} ({name.split(' ', 1)[-1]})" for label, kind, name in c.exercises
                    if not suits_class(kind)]
        out += [f"- **In class:** {'; '.join(in_class) or 'none'}",
                f"- **Homework:** {'; '.join(homework) or 'none'}", ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run python tools/syllabus.py")
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
