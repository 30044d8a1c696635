"""Problems that end in a decision (scaling-book's "Training LLaMA 3 on TPUs" is the model).

Every chapter 01–11 has, in its **Worked problems** section, at least two *chained problems*:
a markdown cell that opens with ``**Chained problem N: …**``, works at least three derived
quantities by hand as a numbered list (``1.``, ``2.``, ``3.`` …, units included) and ends in a
``**Decision:**`` line; the next code cell checks it against the package and folds the answer
(``notebook.answer(...)``). Every chapter also has at least one *open variant* among its
exercises (``Exercise(open_variant=True)``) whose tolerant checker is exercised here with the
reference answer and at least two wrong answers, each rejected with feedback.
"""

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            if 1 <= int(p.name[:2]) <= 11]
MARKER = re.compile(r"^\*\*Chained problem (\d+)[:.]", flags=re.M)
STEP = re.compile(r"^\s*(\d+)\. ", flags=re.M)
DECISION = re.compile(r"^\*\*Decision:\*\*", flags=re.M)


def _cells_of_section(path, heading):
    """The cells between ``## <heading>`` and the next H2, as (kind, text) pairs."""
    out, inside = [], False
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for line in text.splitlines():
                if line.startswith("## "):
                    inside = line[3:].strip().startswith(heading)
        if inside:
            out.append((cell["cell_type"], text))
    return out


def chained_problems(path):
    """[(number, markdown, checking code)] of a chapter's chained problems."""
    cells = _cells_of_section(path, "Worked problem")
    found: list = []
    for i, (kind, text) in enumerate(cells):
        if kind != "markdown" or not MARKER.search(text):
            continue
        nxt = next((t for k, t in cells[i + 1:] if k == "code"), "")
        found.append((int(MARKER.search(text).group(1)), text, nxt))
    return found


def folded_answers(path):
    """The stored Markdown output of the code cell after each chained problem."""
    nb = json.loads(path.read_text(encoding="utf-8"))["cells"]
    out = []
    for i, cell in enumerate(nb):
        if cell["cell_type"] == "markdown" and MARKER.search("".join(cell["source"])):
            code = next(c for c in nb[i + 1:] if c["cell_type"] == "code")
            out.append("".join("".join(o.get("data", {}).get("text/markdown", "")) for o in code["outputs"]))
    return out


def test_there_are_eleven_chapters():
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(1, 12)]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_two_chained_problems_of_three_steps_ending_in_a_decision(path):
    problems = chained_problems(path)
    assert len(problems) >= 2, f"{path.name}: {len(problems)} chained problems (need 2)"
    numbers = [n for n, _, _ in problems]
    assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}: chained problems numbered {numbers}"
    for n, md, code in problems:
        by_hand = md.split("**Decision:**")[0]
        steps = [int(s) for s in STEP.findall(by_hand)]
        assert len(steps) >= 3 and steps[:3] == [1, 2, 3], \
            f"{path.name} chained problem {n}: {len(steps)} derived steps (need 3 or more)"
        assert DECISION.search(md), f"{path.name} chained problem {n}: no **Decision:** line"
        decision = md[DECISION.search(md).end():].strip()
        assert len(decision) > 20, f"{path.name} chained problem {n}: the decision is empty"
        assert "notebook.answer(" in code, \
            f"{path.name} chained problem {n}: the next code cell does not check and fold the answer"
    for n, answer in enumerate(folded_answers(path), 1):
        assert answer.startswith("<details>"), f"{path.name} chained problem {n}: the answer is not folded"
        worked = [int(x) for x in STEP.findall(answer)]
        assert len(worked) >= 3 and "**Decision:**" in answer, \
            f"{path.name} chained problem {n}: the folded answer lacks its worked steps or its decision"


def _module(path):
    return importlib.import_module(f"trainium_lab.exercises.ch{path.name[:2]}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_an_open_variant_per_chapter_used_in_the_notebook(path):
    module = _module(path)
    open_ones = [(name, q) for name, q in vars(module).items()
                 if getattr(q, "open_variant", False) and q in module.ALL]
    assert open_ones, f"{path.name}: no open variant (Exercise(open_variant=True)) in ch{path.name[:2]}.ALL"
    exercises = "\n".join(t for k, t in _cells_of_section(path, "Exercises") if k == "code")
    for name, _ in open_ones:
        assert f"ch{path.name[:2]}.{name}.check(" in exercises, \
            f"{path.name}: open variant {name} is not checked in the Exercises section"


def _open_variants():
    out = []
    for path in CHAPTERS:
        module = _module(path)
        out += [pytest.param(q, id=f"ch{path.name[:2]}.{q.name}") for q in module.ALL if q.open_variant]
    return out


@pytest.mark.parametrize("q", _open_variants())
def test_open_variant_checker_accepts_the_reference_and_rejects_two_wrong_answers(q):
    assert q.judge(q.expected).status == "correct", q.judge(q.expected).message
    wrong = q.wrong_answers
    assert len(wrong) >= 2, f"{q.name}: {len(wrong)} wrong answers tested (need 2)"
    for answer in wrong:
        verdict = q.judge(answer)
        assert verdict.status == "wrong", f"{q.name}: {answer!r} was accepted"
        assert len(verdict.message.split("Hint:")[0]) > len(q.name) + 30, \
            f"{q.name}: {answer!r} is rejected without feedback: {verdict.message}"
    for mistake, feedback in q.mistakes:
        value = mistake() if callable(mistake) else mistake
        assert feedback in q.judge(value).message, (q.name, value)


@pytest.mark.parametrize("q", _open_variants())
def test_open_variant_accepts_more_than_one_answer(q):
    """Tolerant means tolerant: each open variant lists alternatives it must accept."""
    alternatives = getattr(q, "also_accepted", ())
    assert alternatives, f"{q.name}: give also_accepted= (defensible answers other than the reference)"
    for answer in alternatives:
        answer = answer() if callable(answer) else answer   # computed where a model decides it
        assert q.judge(answer).status == "correct", (q.name, answer, q.judge(answer).message)
