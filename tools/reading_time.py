#!/usr/bin/env python3
"""Estimate each chapter's reading time, and write it into the chapter's header cell.

    python tools/reading_time.py            # print every chapter's figures
    python tools/reading_time.py --write    # insert or update the line in each header cell
    python tools/reading_time.py --check    # exit 1 if a stored line is stale or a core path > 45 min
    python tools/reading_time.py --write 05 11   # only these chapters (a number or a notebook path)

The line (idempotent: replaced in place, never added twice) reads
``*Reading time: about N min (core path M min).*`` and sits under the chapter's ``# Title``.

What is counted, and at which rate (words are whitespace-separated tokens):

* **prose** — markdown cells, and markdown a cell displays (worked answers): 200 words a minute
  (the issue's figure for prose);
* **code** — the source of code cells: 200 tokens a minute, like prose: a token of code
  (``sizing.training_state_bytes(1e9,``) carries about as much as a word, and learners read code
  as they read the text around it;
* **printed output** — stdout and the text form of tables and results: 400 words a minute, twice
  the prose rate: a learner scans printed numbers for the one the text talks about, and does not
  read a table word by word;
* **charts and diagrams** — 10 s each (a look, and its caption);
* **widgets** — nothing: exploring is not reading.

The **core path** leaves out everything inside ``<details>`` … ``</details>`` (folded answers,
derivations and reference tables, in markdown cells and in displayed markdown alike); the full
time counts them at the same rates. ``CORE_LIMIT_MIN`` (45 min) is the most a core path may take
(issue 41); tests/test_reading_time.py holds every chapter to it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROSE_WPM = 200
CODE_WPM = 200
OUTPUT_WPM = 400
CHART_S = 10
CORE_LIMIT_MIN = 45
LINE = re.compile(r"^\*Reading time: about \d+ min \(core path \d+ min\)\.\*$", re.M)
DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@dataclass(frozen=True)
class ReadingTime:
    """Words by kind (core path and folded) and the minutes they take."""

    chapter: str
    prose_words: int
    code_words: int
    output_words: int
    charts: int
    folded_prose_words: int
    folded_output_words: int

    @property
    def core_min(self) -> float:
        return (self.prose_words / PROSE_WPM + self.code_words / CODE_WPM
                + self.output_words / OUTPUT_WPM + self.charts * CHART_S / 60)

    @property
    def total_min(self) -> float:
        return self.core_min + self.folded_prose_words / PROSE_WPM + self.folded_output_words / OUTPUT_WPM

    def line(self) -> str:
        return (f"*Reading time: about {math.ceil(self.total_min)} min "
                f"(core path {math.ceil(self.core_min)} min).*")


def words(text: str) -> int:
    """Words a reader reads in markdown: link targets, HTML tags and table rules left out.

    >>> words("See [chapter 04](04_sizing.ipynb), <b>the</b> table:\\n|---|---|\\n| a | b |")
    7
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)      # [text](target) -> text
    text = re.sub(r"<[^>]+>", " ", text)                          # HTML tags
    text = re.sub(r"^\s*>?\s*\|?[\s:|-]+\|?\s*$", " ", text, flags=re.M)  # table rules
    return len([t for t in re.split(r"\s+", re.sub(r"[|#*>`_]", " ", text)) if re.search(r"\w", t)])


def split_details(text: str) -> tuple[str, str]:
    """(what is shown, what is folded in <details>)."""
    folded = " ".join(DETAILS.findall(text))
    return DETAILS.sub(" ", text), folded


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def reading_time(path: Path) -> ReadingTime:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    prose = code = output = charts = folded_prose = folded_output = 0
    for cell in nb["cells"]:
        src = _text(cell["source"])
        if cell["cell_type"] == "markdown":
            if LINE.search(src):
                src = LINE.sub("", src)
            shown, folded = split_details(src)
            prose += words(shown)
            folded_prose += words(folded)
            continue
        if cell["cell_type"] != "code":
            continue
        code += len(src.split())
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                output += len(_text(out.get("text")).split())
                continue
            data = out.get("data", {})
            if WIDGET_MIME in data:
                continue
            if "image/svg+xml" in data or "image/png" in data:
                charts += 1
            elif "text/markdown" in data:
                shown, folded = split_details(_text(data["text/markdown"]))
                prose += words(shown)
                folded_prose += words(folded)
            elif "text/html" in data:
                shown, folded = split_details(_text(data["text/html"]))
                output += len(_text(data.get("text/plain")).split()) if not folded else words(shown)
                folded_output += words(folded)
            elif "text/plain" in data:
                output += len(_text(data["text/plain"]).split())
    return ReadingTime(Path(path).stem, prose, code, output, charts, folded_prose, folded_output)


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def chapter_path(name: str) -> Path:
    """A notebook path, or a chapter number (``"05"``) resolved to its notebook.

    >>> chapter_path("05").name.startswith("05_")
    True
    """
    if Path(name).exists():
        return Path(name)
    found = sorted((ROOT / "notebooks").glob(f"{name}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"chapter must be a notebook path or a chapter number such as 05; {name!r} matches "
                         f"{len(found)} notebooks")
    return found[0]


def header_index(cells) -> int:
    """The cell holding the chapter's ``# Title``."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(r"^# ", _text(cell["source"]), flags=re.M):
            return i
    raise ValueError("the notebook has no markdown cell with a '# Title'")


def with_line(source: str, line: str) -> str:
    """The header cell's source with the reading-time line inserted or replaced (idempotent):
    after the title and its subtitle (the first paragraph under ``# Title``).

    >>> s = "# 01 · Title\\n*A subtitle.*\\n\\n**Learning goals**"
    >>> once = with_line(s, "*Reading time: about 50 min (core path 40 min).*")
    >>> once.splitlines()[2:4]
    ['', '*Reading time: about 50 min (core path 40 min).*']
    >>> with_line(once, "*Reading time: about 51 min (core path 41 min).*").count("Reading time")
    1
    """
    if LINE.search(source):
        return LINE.sub(line, source, count=1)
    lines = source.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# "))
    end = start + 1
    while end < len(lines) and lines[end].strip():
        end += 1
    return "\n".join(lines[:end] + ["", line] + lines[end:])


def write(path: Path) -> bool:
    """Insert or update the line in one notebook; True when the file changed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    i = header_index(nb["cells"])
    cell = nb["cells"][i]
    new = with_line(_text(cell["source"]), reading_time(path).line())
    if new == _text(cell["source"]):
        return False
    cell["source"] = new.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def stored_line(path: Path) -> str | None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    m = LINE.search(_text(nb["cells"][header_index(nb["cells"])]["source"]))
    return m.group(0) if m else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="insert or update the line in every chapter")
    parser.add_argument("--check", action="store_true", help="exit 1 if a line is stale or a core path too long")
    parser.add_argument("paths", nargs="*", help="chapters (05) or notebook paths; default: every chapter")
    args = parser.parse_args(argv)
    bad = 0
    print(f"{'chapter':34} {'prose':>6} {'code':>6} {'output':>6} {'charts':>6} {'folded':>6} "
          f"{'core min':>8} {'total':>6} {'over 45':>7}")
    for path in [chapter_path(p) for p in args.paths] or notebooks():
        r = reading_time(path)
        over = max(0.0, r.core_min - CORE_LIMIT_MIN)
        print(f"{r.chapter:34} {r.prose_words:6,} {r.code_words:6,} {r.output_words:6,} {r.charts:6} "
              f"{r.folded_prose_words + r.folded_output_words:6,} {r.core_min:8.1f} {r.total_min:6.1f} "
              f"{over:7.1f}")
        if args.write and write(path):
            print(f"  wrote: {r.line()}")
        if args.check and (over > 0 or stored_line(path) != r.line()):
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
