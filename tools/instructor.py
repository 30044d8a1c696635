#!/usr/bin/env python3
"""Write the instructor edition: an nbgrader course directory made from the chapters.

    python3 tools/course.py instructor OUT/                 # every chapter
    .venv/bin/python tools/instructor.py OUT/ --chapters 04 09 [--feedback]

Nothing here is maintained by hand: each chapter's notebook and its ``Exercise`` objects
(``trainium_lab/exercises/chNN.py``) are the sources. For every chapter ``NN_topic.ipynb`` it
writes ``OUT/source/chNN/NN_topic.ipynb``, an nbgrader source notebook in which

* every exercise's answer cell (``answer_K = ...`` then ``chNN.qK.check(answer_K)``) becomes an
  nbgrader *solution* cell: the starter code, then the exercise's solution code (the package's,
  the single source of the expected answer) between ``### BEGIN SOLUTION`` / ``### END SOLUTION``;
* its check becomes a locked, autograded *test* cell worth ``POINTS`` point(s), whose assertion
  (``Exercise.judge``, the same tolerance and mistakes as ``check``) sits between
  ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``; with ``--feedback`` the cell also keeps
  the visible ``check`` line, so students see ✓ / ✗ before they submit;
* the "reveal" cells that print an answer after its question are left out, and a locked cell
  after the setup cell turns ``q.solution()`` off (:func:`trainium_lab.exercises.hide_solutions`)
  and puts in scope the names a solution may use.

Plus ``OUT/nbgrader_config.py`` and ``OUT/INSTRUCTOR_GUIDE.md``. Then, in ``OUT/``,
``nbgrader generate_assignment chNN`` writes the student copy (``release/chNN/``).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: points per exercise (every exercise counts the same)
POINTS = 1
#: an exercise's answer cell ends with its check: ``ch04.q1.check(answer_1)``
CHECK = re.compile(r"^(?P<module>ch\d\d)\.(?P<q>q\w+)\.check\((?P<answer>answer\w*)\)\s*$")
REVEAL = re.compile(r"^\s*# reveal\b")
ANY_CHECK = re.compile(r"\bch\d\d\.q\w+\.check\(")
SCHEMA_VERSION = 3
#: the nbgrader the instructor extra pins (pyproject.toml), named in the guide
NBGRADER_VERSION = re.search(r'"nbgrader==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)

GRADED_SETUP = """\
# Graded copy: q.solution() is turned off, and the names a solution may use are in scope
# (the model modules, the units constants, math, np). Locked: nbgrader restores this cell.
from trainium_lab import exercises as _exercises

_exercises.hide_solutions()
for _name, _value in _exercises.solution_namespace().items():
    globals().setdefault(_name, _value)"""

CONFIG = """\
\"\"\"nbgrader configuration of the Trainium Lab course (written by tools/instructor.py).\"\"\"

import base64
import html
import os
import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

c = get_config()  # noqa: F821 - provided by nbgrader

COURSE = os.path.dirname(os.path.abspath(__file__))  # this folder
c.CourseDirectory.course_id = "trainium-lab"
c.CourseDirectory.root = COURSE
# one assignment per chapter: {assignments}
# a student's answer cell starts from the chapter's starter code; nothing raises
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE"}}
c.ClearSolutions.enforce_metadata = True
# every chapter runs in seconds; a generous limit for a loaded grading server
c.Execute.timeout = 300
c.Execute.interrupt_on_timeout = True
# where assignments, submissions and feedback pass between instructor and students. nbgrader
# 0.9.6's own default is /usr/local/share/nbgrader/exchange, which must exist and be writable by
# everyone; this course uses exchange/ in this folder (written with it) unless NBGRADER_EXCHANGE
# names another, e.g. on a JupyterHub a folder every user can reach: see INSTRUCTOR_GUIDE.md
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", os.path.join(COURSE, "exchange"))


class ChartAltText(Preprocessor):
    \"\"\"Feedback pages keep what students saw: each chart's text description (its SVG's ARIA
    label) becomes the image's alt text (nbconvert's default says "No description has been
    provided"), and an explorer's stored picture is shown where its live widget cannot be.\"\"\"

    enabled = Bool(True)  # nbconvert's preprocessors are off unless enabled

    def preprocess_cell(self, cell, resources, index):
        for out in cell.get("outputs", []):
            data = out.get("data", {{}})
            svg = data.get("image/svg+xml")
            if not svg:
                continue
            text = "".join(svg) if isinstance(svg, list) else svg
            label = re.search(r'<svg[^>]*?aria-label="([^"]*)"', text)
            alt = html.escape(html.unescape(label.group(1)), quote=True) if label else "a chart"
            # nbgrader's feedback template draws an SVG as an <img> without alt text: the chart is
            # handed over as HTML, an <img> with the description as its alt text
            encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
            data["text/html"] = f'<img alt="{{alt}}" src="data:image/svg+xml;base64,{{encoded}}">'
            data.pop("application/vnd.jupyter.widget-view+json", None)
        return cell, resources


# generate_feedback's own preprocessors (nbgrader 0.9.6: GetGrades, CSSHTMLHeaderPreprocessor), then ours
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import GetGrades  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ChartAltText]
"""

GUIDE = """\
# Trainium Lab: instructor guide (nbgrader)

This folder is an [nbgrader](https://nbgrader.readthedocs.io/) course directory, written by
`python3 tools/course.py instructor OUT/` from the course's chapters and the exercises in
`trainium_lab/exercises/`. Regenerate it after updating the course; do not edit the source
notebooks by hand. **Run every command below in this folder** (the one holding
`nbgrader_config.py`), with the course's environment active (`source .venv/bin/activate` in
the course's clone; it pins nbgrader {nbgrader_version}).

## What is here

| path | what |
|---|---|
| `nbgrader_config.py` | course id `trainium-lab`, solution stub, execution timeout, the exchange folder, chart descriptions in feedback |
| `source/chNN/NN_topic.ipynb` | one assignment per chapter: the chapter with solution cells and hidden, autograded test cells |
| `exchange/` | where assignments, submissions and feedback pass between you and the students |

Assignments and points:

{table}

## Set up (once)

The exchange is `exchange/` in this folder (`nbgrader_config.py`), not nbgrader {nbgrader_version}'s
own default, `/usr/local/share/nbgrader/exchange`, which must exist and be writable by every user
before `release_assignment` or `release_feedback` work. On a JupyterHub, use a folder every user
can reach and say so to every server: `export NBGRADER_EXCHANGE=/srv/nbgrader/exchange` (for the
students too, e.g. in the hub's spawner environment), created once with
`mkdir -p /srv/nbgrader/exchange && chmod ugo+rwx /srv/nbgrader/exchange`. Students' servers need
the course installed (`pip install -c requirements/lock.txt -e .`): the notebooks import
`trainium_lab`.

Add the students to the grade book (or `nbgrader db student import students.csv`):

```bash
nbgrader db student add alice --first-name Alice --last-name Example
```

## Release

```bash
nbgrader generate_assignment ch04       # student copy -> release/ch04/ (solutions and hidden tests removed)
nbgrader release_assignment ch04        # into the exchange, where students fetch it
```

## What a student does

On a JupyterHub this is the *Assignments* tab (*Fetch*, then *Submit*). Without one, in a folder
of the student's own:

```bash
mkdir -p students/alice && cd students/alice
nbgrader fetch_assignment ch04 --course trainium-lab --Exchange.root=../../exchange
```

The student answers the exercises in `ch04/04_sizing.ipynb` (in JupyterLab), then submits:

```bash
cd students/alice
nbgrader submit ch04 --course trainium-lab --student alice --Exchange.root=../../exchange
```

## Collect, grade, return feedback

```bash
nbgrader collect ch04                   # submitted/<student>/ch04/
nbgrader autograde ch04                 # runs each submission in a fresh kernel, fills the grade book
nbgrader generate_feedback ch04         # feedback/<student>/ch04/*.html
nbgrader release_feedback ch04          # into the exchange
nbgrader export                         # grades.csv
```

The student fetches the feedback (the *Assignments* tab on a hub):

```bash
cd students/alice
nbgrader fetch_feedback ch04 --course trainium-lab --student alice --Exchange.root=../../exchange
```

It lands in `students/alice/ch04/feedback/<time>/04_sizing.html`. The same instructor steps are
buttons in the Formgrader (`jupyter lab` in the course's environment: *Nbgrader → Formgrader*;
the learner's `python3 tools/course.py lab` leaves nbgrader's menus out). Without the exchange
at all, copy `release/chNN/` to students, put their notebooks in `submitted/<student>/chNN/`,
run `nbgrader autograde chNN`, and hand out `feedback/<student>/chNN/*.html`.

## Warnings you will see, and what they mean

- **`WARNING Attribute 'checksum' for cell chNN-qK-test has changed!`**, once for each test
  cell with hidden tests, for every student, even when nobody touched the cell. nbgrader stores
  each test cell's checksum in the grade book *before* it removes the hidden tests from the
  student copy, so the copy never matches it ([nbgrader issue 1961](https://github.com/jupyter/nbgrader/issues/1961),
  open in nbgrader {nbgrader_version}). It is not a sign of tampering: autograde puts the
  instructor's version of every locked cell back before it runs, so a student's edit to a test
  cell cannot change a grade. Other attributes than `checksum` (`source`, `points`) in that
  warning do mean the submitted cell differs from the release.
- SQLAlchemy `SAWarning`s on the first `autograde` come from nbgrader's grade book, not from the
  course.

## What the student copies contain

- The whole chapter: text, derivations, worked problems (their answers folded as in the course),
  the Explore widgets, and the exercises' questions.
- In each exercise's answer cell the starter code (`answer_1 = ...  # GiB`) and `# YOUR CODE HERE`,
  where the instructor's copy has the solution code. A cell left at `...` scores 0.
- After each answer cell a locked test cell worth its points. Its assertion (the exercise's own
  `judge`, with the tolerance and the recognised mistakes of `q.check`) is hidden: students do not
  see it, and nbgrader puts it back when it autogrades. {feedback}
- No "reveal" cells: in the course, some exercises print their answer in a cell after the
  question; the graded edition leaves those cells out.
- A locked cell after the setup cell that calls `trainium_lab.exercises.hide_solutions()`:
  `q.solution()` then prints that the solution is not shown in a graded copy. `q.hint()` still
  works.

In the feedback pages every chart keeps its text description as the image's alt text, and each
explorer shows its stored picture (a live widget needs a kernel): `ChartAltText` in
`nbgrader_config.py`.

What this does not do: the course is open, and `trainium_lab/exercises/chNN.py` holds every
solution a student's Python can import. The graded edition keeps answers out of the notebook a
student works in, not out of reach of someone who reads the package. For marks that matter, grade
work done where the package's solutions are not readable, or pair the autograded part with
explanations graded by hand (the "explain why / design" exercises suit that).
"""


def chapter_notebooks(chapters: list[str] | None = None) -> list[Path]:
    found = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if chapters:
        wanted = {c.zfill(2) for c in chapters}
        unknown = wanted - {p.name[:2] for p in found}
        if unknown:
            raise ValueError(f"--chapters: no chapter {sorted(unknown)}; "
                             f"valid are {[p.name[:2] for p in found]}")
        found = [p for p in found if p.name[:2] in wanted]
    return found


def source_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def nbgrader_meta(grade_id: str, *, solution: bool = False, grade: bool = False,
                  locked: bool = False, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked,
            "schema_version": SCHEMA_VERSION, "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def code_cell(source: str, nbgrader: dict) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": nbgrader["grade_id"],
            "metadata": {"nbgrader": nbgrader}, "outputs": [], "source": source}


def exercise_of(module: str, name: str):
    """The ``Exercise`` a check line names, from the package (``ch04``, ``q1``)."""
    return getattr(importlib.import_module(f"trainium_lab.exercises.{module}"), name)


def graded_cells(cell: dict, *, feedback: bool) -> list[dict] | None:
    """An answer cell as (solution cell, test cell), or None when it is not an answer cell."""
    lines = source_text(cell).rstrip().splitlines()
    if not lines:
        return None
    check = CHECK.match(lines[-1])
    if check is None:
        return None
    module, name, answer = check["module"], check["q"], check["answer"]
    exercise = exercise_of(module, name)
    starter = "\n".join(lines[:-1]).rstrip()
    solution = "\n".join([*([starter] if starter else []), "### BEGIN SOLUTION",
                          exercise.solution_code.rstrip(), "### END SOLUTION"])
    label = f"{module}.{name}"
    test = "\n".join([f"# Graded ({POINTS} point{'s' if POINTS != 1 else ''}): hidden tests check "
                      f"{answer} when your notebook is autograded.",
                      *([f"{label}.check({answer})"] if feedback else []),
                      "### BEGIN HIDDEN TESTS",
                      f"_verdict = {label}.judge({answer})",
                      "assert _verdict.status == \"correct\", _verdict.message",
                      "### END HIDDEN TESTS"])
    grade_id = f"{module}-{name}"
    return [code_cell(solution, nbgrader_meta(f"{grade_id}-answer", solution=True)),
            code_cell(test, nbgrader_meta(f"{grade_id}-test", grade=True, locked=True,
                                          points=POINTS))]


def is_setup_cell(cell: dict) -> bool:
    return cell["cell_type"] == "code" and "notebook.setup()" in source_text(cell)


def source_notebook(path: Path, *, feedback: bool = False) -> tuple[dict, int]:
    """(nbgrader source notebook, number of graded exercises) for one chapter."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells, n_graded, setup_done = [], 0, False
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and REVEAL.match(source_text(cell)):
            continue  # prints an answer below its question
        out = copy.deepcopy(cell)
        if out["cell_type"] == "code":
            out["outputs"], out["execution_count"] = [], None
            graded = graded_cells(cell, feedback=feedback)
            if graded is not None:
                cells += graded
                n_graded += 1
                continue
            if ANY_CHECK.search(source_text(cell)):  # never ship an exercise ungraded by accident
                raise ValueError(f"{path.name}: a cell checks an exercise but does not end with "
                                 f"`chNN.qK.check(answer_K)`: {source_text(cell)[:80]!r}")
        cells.append(out)
        if not setup_done and is_setup_cell(cell):
            setup = copy.deepcopy(cell)
            setup["metadata"] = {**setup.get("metadata", {}),
                                 "nbgrader": nbgrader_meta(f"ch{path.name[:2]}-setup", locked=True)}
            cells[-1] = setup
            cells.append(code_cell(GRADED_SETUP, nbgrader_meta(f"ch{path.name[:2]}-graded-setup",
                                                               locked=True)))
            setup_done = True
    if n_graded and not setup_done:
        raise ValueError(f"{path.name}: exercises but no setup cell calling notebook.setup()")
    nb["cells"] = cells
    nb.setdefault("metadata", {}).pop("widgets", None)
    return nb, n_graded


def assignment_name(path: Path) -> str:
    return f"ch{path.name[:2]}"


def write_course(out: Path, chapters: list[str] | None = None, *, feedback: bool = False) -> dict:
    """Write the course directory; returns {assignment: (notebook name, points)}."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for path in chapter_notebooks(chapters):
        nb, n_graded = source_notebook(path, feedback=feedback)
        folder = out / "source" / assignment_name(path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
        summary[assignment_name(path)] = (path.name, n_graded * POINTS)
    (out / "nbgrader_config.py").write_text(
        CONFIG.format(assignments=", ".join(summary)), encoding="utf-8")
    table = "\n".join(["| assignment | notebook | exercises (points) |", "|---|---|---|",
                       *(f"| `{a}` | `{name}` | {points} |" for a, (name, points) in summary.items())])
    note = ("This edition was written with `--feedback`: each test cell also runs the visible "
            "`q.check(answer)`, so students see ✓ / ✗ before they submit." if feedback else
            "Students get no ✓ / ✗ before grading (write the edition with `--feedback` to keep "
            "the visible `q.check(answer)` line in each test cell).")
    (out / "INSTRUCTOR_GUIDE.md").write_text(
        GUIDE.format(table=table, feedback=note, nbgrader_version=NBGRADER_VERSION), encoding="utf-8")
    exchange = out / "exchange"  # nbgrader needs it to exist, writable by every user of the course
    exchange.mkdir(exist_ok=True)
    exchange.chmod(0o777)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the nbgrader course directory in")
    parser.add_argument("--chapters", nargs="+", metavar="NN", help="only these chapters (default: all)")
    parser.add_argument("--feedback", action="store_true",
                        help="keep the visible q.check(answer) line in each test cell")
    args = parser.parse_args(argv)
    try:
        summary = write_course(args.out, args.chapters, feedback=args.feedback)
    except ValueError as exc:
        print(f"instructor: {exc}", file=sys.stderr)
        return 2
    for name, (notebook, points) in summary.items():
        print(f"{args.out / 'source' / name / notebook}: {points} point(s)")
    print(f"{args.out / 'INSTRUCTOR_GUIDE.md'}: how to release, collect and autograde")
    return 0


if __name__ == "__main__":
    sys.exit(main())
