"""The instructor edition, end to end with nbgrader and offline: tools/instructor.py writes the
course directory from the chapters and the package's exercises; nbgrader generates the student
copy; one copy filled with the reference solutions and one with the classic wrong answers in
every other exercise are autograded, and the grade book holds full marks and the expected
partial marks, cell by cell.

Two chapters keep it short (each autograde runs the whole chapter in a fresh kernel); the tool's
handling of every chapter is checked without nbgrader's execution in
``test_every_chapter_becomes_an_assignment``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import instructor  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHAPTERS = ["04", "06"]  # numbers and strings ("which cause?") as answers
ANSWER_ID = re.compile(r"^(ch\d\d)-(q\w+)-answer$")


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # nbgrader runs `alembic` for its grade book: the environment's scripts come first
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def literal(value):
    """Python source for a value a notebook cell can assign, or None when there is none."""
    if isinstance(value, float) or type(value).__module__ == "numpy":
        value = value.item() if hasattr(value, "item") else value
    try:
        text = repr(value)
        return text if ast.literal_eval(text) == value else None
    except (ValueError, SyntaxError):
        return None


def fill(release: Path, target: Path, wrong_every_other: bool) -> dict[str, int]:
    """Write a submission from the student copy; returns {grade_id of the test cell: points
    it should get}."""
    nb = json.loads(release.read_text(encoding="utf-8"))
    expected = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        match = ANSWER_ID.match(meta.get("grade_id", ""))
        if not (meta.get("solution") and match):
            continue
        module, name = match.groups()
        exercise = instructor.exercise_of(module, name)
        number = int(re.sub(r"\D", "", name))
        wrong = literal(exercise.wrong) if wrong_every_other and number % 2 == 0 else None
        answer = re.search(r"answer\w*", exercise.solution_code.splitlines()[-1]).group(0)
        code = f"{answer} = {wrong}" if wrong is not None else exercise.solution_code
        source = "".join(cell["source"])
        assert "# YOUR CODE HERE" in source, source
        assert "BEGIN SOLUTION" not in source and exercise.solution_code not in source
        cell["source"] = source.replace("# YOUR CODE HERE", code)
        expected[f"{module}-{name}-test"] = 0 if wrong is not None else instructor.POINTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb), encoding="utf-8")
    return expected


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    summary = instructor.write_course(course, CHAPTERS)
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for assignment, (notebook, _) in summary.items():
        nbgrader(course, "generate_assignment", assignment, "--create")
        release = course / "release" / assignment / notebook
        for student, wrong in (("reference", False), ("mistakes", True)):
            expected[assignment, student] = fill(
                release, course / "submitted" / student / assignment / notebook, wrong)
        nbgrader(course, "autograde", assignment, "--create")
    return course, summary, expected


@pytest.mark.slow
def test_student_copy_has_no_solutions_and_no_hidden_tests(graded):
    course, summary, _ = graded
    for assignment, (notebook, points) in summary.items():
        text = (course / "release" / assignment / notebook).read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert ".judge(" not in text
        nb = json.loads(text)
        cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert not any(instructor.REVEAL.match("".join(c["source"])) for c in cells)
        tests = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade")]
        assert sum(c["metadata"]["nbgrader"]["points"] for c in tests) == points > 0
        assert any("hide_solutions()" in "".join(c["source"]) for c in cells)


@pytest.mark.slow
def test_autograde_gives_full_and_expected_partial_marks(graded):
    from nbgrader.api import Gradebook

    course, summary, expected = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for assignment, (notebook, points) in summary.items():
            reference = gradebook.find_submission(assignment, "reference")
            assert reference.max_score == points
            assert reference.score == points, f"{assignment}: reference solutions lose marks"
            mistakes = gradebook.find_submission(assignment, "mistakes")
            want = expected[assignment, "mistakes"]
            assert 0 < sum(want.values()) < points, "the wrong copy must get partial marks"
            assert mistakes.score == sum(want.values())
            for grade_id, cell_points in want.items():
                grade = gradebook.find_grade(grade_id, Path(notebook).stem, assignment, "mistakes")
                assert grade.score == cell_points, grade_id


def test_every_chapter_becomes_an_assignment(tmp_path):
    summary = instructor.write_course(tmp_path)
    assert list(summary) == [f"ch{p.name[:2]}" for p in NOTEBOOKS]
    assert (tmp_path / "nbgrader_config.py").is_file()
    guide = (tmp_path / "INSTRUCTOR_GUIDE.md").read_text(encoding="utf-8")
    for word in ("release_assignment", "collect", "autograde", "hide_solutions", "JupyterHub"):
        assert word in guide
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        n_checks = sum(bool(instructor.CHECK.match(line)) for c in cells if c["cell_type"] == "code"
                       for line in "".join(c["source"]).splitlines()[-1:])
        source = json.loads((tmp_path / "source" / f"ch{path.name[:2]}" / path.name).read_text())
        meta = [c["metadata"].get("nbgrader", {}) for c in source["cells"]]
        assert sum(m.get("solution", False) for m in meta) == n_checks > 0, path.name
        assert sum(m.get("points", 0) for m in meta) == n_checks * instructor.POINTS
        ids = [m["grade_id"] for m in meta if m]
        assert len(ids) == len(set(ids)), "grade ids are unique"
        for cell, m in zip(source["cells"], meta):
            if m.get("solution"):  # the package's solution code, between nbgrader's markers
                module, name = ANSWER_ID.match(m["grade_id"]).groups()
                code = instructor.exercise_of(module, name).solution_code
                assert f"### BEGIN SOLUTION\n{code.rstrip()}\n### END SOLUTION" in cell["source"]


def test_solution_is_hidden_in_a_graded_copy(capsys):
    from trainium_lab import exercises
    from trainium_lab.exercises import ch04

    exercises.hide_solutions()
    try:
        ch04.q1.solution()
    finally:
        exercises.hide_solutions(False)
    out = capsys.readouterr().out
    assert "not shown in a graded copy" in out and ch04.q1.solution_code not in out
    ch04.q1.solution()
    assert ch04.q1.solution_code in capsys.readouterr().out


def test_unknown_chapter_is_a_clear_error(tmp_path):
    assert instructor.main([str(tmp_path), "--chapters", "42"]) == 2


# --------------------------------------------------------------------------- issue 42: the guide, verbatim

@pytest.mark.slow
def test_the_guide_works_verbatim_release_collect_autograde_feedback(tmp_path):
    """Every ``bash`` block of INSTRUCTOR_GUIDE.md, as written, in order, in the course folder on a
    fresh machine (no exchange made beforehand, no hub): release, fetch, submit, collect,
    autograde, feedback. Between fetch and submit the student fills the answers with the
    reference solutions; the grade is full, and the feedback page keeps each chart's text
    description and shows the explorer's picture."""
    course = tmp_path / "OUT"
    summary = instructor.write_course(course, ["04"])
    notebook, points = summary["ch04"]
    guide = (course / "INSTRUCTOR_GUIDE.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", guide, flags=re.S)
    assert [b for b in blocks if "fetch_assignment" in b] and [b for b in blocks if "release_feedback" in b]
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXCHANGE"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    logs = []
    for block in blocks:
        proc = subprocess.run(["bash", "-e", "-c", block], cwd=course, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, (block, proc.stdout[-2000:], proc.stderr[-4000:])
        logs.append(proc.stderr)
        if "fetch_assignment" in block:  # the student's work
            fetched = course / "students" / "alice" / "ch04" / notebook
            assert fetched.is_file(), block
            want = fill(fetched, fetched, wrong_every_other=False)
            assert sum(want.values()) == points
    grades = (course / "grades.csv").read_text(encoding="utf-8").splitlines()
    header, rows = grades[0].split(","), [r.split(",") for r in grades[1:]]
    alice = [dict(zip(header, r)) for r in rows if "alice" in r]
    assert alice and float(alice[0]["raw_score"]) == points, grades
    pages = list((course / "students" / "alice" / "ch04" / "feedback").glob(f"*/{Path(notebook).stem}.html"))
    assert len(pages) == 1, pages
    page = pages[0].read_text(encoding="utf-8")
    assert "No description has been provided" not in page
    alts = re.findall(r'<img[^>]*alt="([^"]+)"', page)
    assert len(alts) >= 4 and any("HBM beside what a plan puts on it" in a for a in alts), alts
    # the checksum warnings the guide explains are nbgrader's, and only about checksums
    warnings = re.findall(r"Attribute '(\w+)' for cell (\S+) has changed", "\n".join(logs))
    assert {attr for attr, _ in warnings} <= {"checksum"}
    assert "issue 1961" in guide and "/usr/local/share/nbgrader/exchange" in guide
