"""Every chapter teaches the scaling-book way: a Numbers-to-remember box, at least three worked
problems with folded answers, at least five self-checking exercises of which at least two are
"predict, then reveal" and at least two "explain why" or design items."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def sections(path):
    """{H2 heading: [cells]} in notebook order."""
    out, current = {}, None
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            out.setdefault(current, []).append(("code", text))
            continue
        # a markdown cell may close one section and open the next: split it at its H2 headings
        parts = re.split(r"^## (.+)$", text, flags=re.M)
        out.setdefault(current, []).append(("markdown", parts[0]))
        for heading, body in zip(parts[1::2], parts[2::2]):
            current = heading.strip()
            out.setdefault(current, []).append(("markdown", body))
    return out


def section(secs, prefix):
    return next((cells for name, cells in secs.items() if name and name.startswith(prefix)), [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_teaching_anatomy(path):
    secs = sections(path)
    all_md = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                       if c["cell_type"] == "markdown")
    assert "Numbers to remember" in all_md, f"{path.name}: no Numbers-to-remember box"
    worked = section(secs, "Worked problem")
    folded = sum(t.count("<details") for kind, t in worked if kind == "markdown") + \
        sum(1 for kind, t in worked if kind == "code" and re.search(r"\banswer\(", t))
    assert folded >= 3, f"{path.name}: {folded} folded worked-problem answers"
    exercises = section(secs, "Exercises")
    checks = sum(1 for kind, t in exercises if kind == "code" and re.search(r"\.q\d+\.check\(", t))
    assert checks >= 5, f"{path.name}: {checks} self-checking exercises"
    ex_md = "\n".join(t for kind, t in exercises if kind == "markdown")
    predict = len(re.findall(r"predict", ex_md, flags=re.I))
    explain = len(re.findall(r"explain|design", ex_md, flags=re.I))
    assert predict >= 2, f"{path.name}: {predict} predict-then-reveal items"
    assert explain >= 2, f"{path.name}: {explain} explain-why or design items"
