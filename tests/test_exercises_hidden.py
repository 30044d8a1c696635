"""No exercise's answer is printed above its question: a learner must work it out, not scroll up.

For each chapter, every exercise ``chNN.qK`` is found by its first ``.qK.check(`` cell; the
outputs of every code cell before it (text, HTML, Markdown; not chart images) must not show the
exercise's expected number in any of the usual formats. Numbers with fewer than three significant
digits (2, 0.5, 64…) are skipped: they appear everywhere for other reasons; so are text and
yes/no answers.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TEXT_MIMES = ("text/plain", "text/html", "text/markdown")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def renderings(x: float) -> set[str]:
    """How a notebook might print ``x``; only those carrying three or more significant digits."""
    out = set()
    mantissa = re.sub(r"\D", "", f"{abs(x):.6e}".split("e")[0]).rstrip("0")
    if len(mantissa) < 3:
        return out
    for fmt in ("{:.3g}", "{:.4g}", "{:,.0f}", "{:,.1f}", "{:,.2f}", "{:.1f}", "{:.2f}", "{:.0f}"):
        s = fmt.format(x)
        if len(re.sub(r"\D", "", s).lstrip("0")) >= 3 and "e" not in s:
            out.add(s)
    return out


def exercise_cases():
    cases = []
    for path in NOTEBOOKS:
        chapter = path.name[:2]
        try:
            module = importlib.import_module(f"trainium_lab.exercises.ch{chapter}")
        except ModuleNotFoundError:
            continue
        for name in dir(module):
            if re.fullmatch(r"q\d+", name) and searchable(getattr(module, name).expected):
                cases.append(pytest.param(path, name, getattr(module, name), id=f"{path.stem}.{name}"))
    return cases


def searchable(expected) -> bool:
    """True when the answer holds a number with three or more significant digits."""
    values = expected if isinstance(expected, (tuple, list)) else (expected,)
    return any(renderings(float(v)) for v in values if isinstance(v, (int, float))
               and not isinstance(v, bool) and math.isfinite(float(v)))


@pytest.mark.parametrize("path,name,q", exercise_cases())
def test_answer_not_printed_above_its_question(path, name, q):
    expected = q.expected
    values = expected if isinstance(expected, (tuple, list)) else (expected,)
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(float(v))]
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    at = next((i for i, c in enumerate(code) if re.search(rf"\.{name}\.check\(", _text(c["source"]))),
              None)
    assert at is not None, f"{path.name}: no cell checks {name}"
    shown = []
    for cell in code[:at]:
        for out in cell.get("outputs", []):
            shown.append(_text(out.get("text", "")))
            shown += [_text(out.get("data", {}).get(m, "")) for m in TEXT_MIMES]
    text = "\n".join(shown)
    assert not leaks_in(text, numbers, is_tuple=isinstance(expected, (tuple, list))), \
        f"{path.name} prints {name}'s answer ({expected!r}) above it as {leaks_in(text, numbers, is_tuple=isinstance(expected, (tuple, list)))}"


def leaks_in(text: str, numbers: list[float], *, is_tuple: bool) -> list[str]:
    """Where ``text`` shows the answer. A number is shown in any of its renderings; a tuple
    answer (a bucket set, a tile shape) is shown when its numbers appear together, in order,
    with only a separator between them ("97, 198, 336, 512", "256 × 512 × 2048"): its elements
    alone are common powers of two and lengths that a chapter prints for other reasons."""
    bare = r"(?<![\d.,]){}(?![\d])"
    if not is_tuple or len(numbers) < 2:
        patterns = set().union(*(renderings(v) for v in numbers))
        return sorted(p for p in patterns if re.search(bare.format(re.escape(p)), text))
    alternatives = ["(?:" + "|".join(re.escape(r) for r in sorted(renderings(v) | {f"{v:g}"}, key=len, reverse=True)) + ")"
                    for v in numbers]
    joined = r"[^\d\n]{1,6}".join(alternatives)
    return sorted({m.group(0) for m in re.finditer(bare.format(joined), text)})


def test_a_tuple_answer_is_caught_when_printed_together():
    # chapter 07's bucket table once showed an open variant's answer in one row
    assert leaks_in("3  optimal  4  97, 198, 336, 512  15.0%", [97, 198, 336, 512], is_tuple=True)
    assert leaks_in("tile 256 × 512 × 2048 wins", [256, 512, 2048], is_tuple=True)
    assert not leaks_in("128 × 1024 BF16 (2,048 B per partition); 256 lanes; 512 MiB", [256, 512, 2048],
                        is_tuple=True)
    assert leaks_in("the batch is 1,234 tokens", [1234], is_tuple=False)
