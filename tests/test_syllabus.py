"""The syllabus is generated from the chapters and up to date (regenerate and compare, like the
cheat sheet); it covers every chapter, its goals and every exercise, and the week plan keeps the
chapters' order within 10-12 weeks."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import syllabus  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_syllabus_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "syllabus.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_changed_chapter_makes_it_stale(tmp_path, monkeypatch):
    """The check can fail: a goal edited in a chapter changes the page."""
    for path in NOTEBOOKS:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    nb = json.loads((tmp_path / NOTEBOOKS[4].name).read_text(encoding="utf-8"))
    head = next(c for c in nb["cells"] if "**Learning goals**" in "".join(c["source"]))
    head["source"] = "".join(head["source"]).replace("**Learning goals**\n- ",
                                                     "**Learning goals**\n- Something new. ")
    (tmp_path / NOTEBOOKS[4].name).write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(syllabus, "NOTEBOOKS", tmp_path)
    text = syllabus.render()
    assert "Something new." in text
    assert text != (ROOT / "docs" / "syllabus.md").read_text(encoding="utf-8")


def test_every_chapter_goal_and_exercise_is_on_the_page():
    text = (ROOT / "docs" / "syllabus.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert f"../notebooks/{path.name}" in text
        n_checks = sum(bool(re.search(r"^ch\d\d\.q\w+\.check\(", "".join(c["source"]), re.M))
                       for c in nb["cells"] if c["cell_type"] == "code")
        chapter = syllabus.read_chapter(path)
        assert chapter.goals, f"{path.name}: no learning goals read"
        assert len(chapter.exercises) == n_checks > 0
        for goal in chapter.goals:
            assert goal in text
        section = text.split(f"### [{path.name[:2]}]", 1)[1].split("\n### ", 1)[0]
        listed = re.findall(r"\bQ\d+ \(", section)
        assert len(listed) == n_checks, f"{path.name}: {listed}"
        assert chapter.minutes > 0


def test_plan_keeps_order_and_fits_10_to_12_weeks():
    chapters = syllabus.chapters()
    weeks = syllabus.plan(chapters)
    assert 10 <= len(weeks) <= 12
    assert [c.stem for week in weeks for c in week] == [c.stem for c in chapters]
    for chapter in chapters:  # a prerequisite never comes later than the chapter
        for pre in chapter.prerequisites:
            assert pre < chapter.stem[:2]


def test_class_and_homework_split():
    assert syllabus.suits_class("predict, then reveal")
    assert syllabus.suits_class("which cause?")
    assert not syllabus.suits_class("design")
    assert not syllabus.suits_class("explain why")
    assert not syllabus.suits_class("")
