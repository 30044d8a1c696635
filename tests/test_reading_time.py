"""Every chapter shows its reading time, and its core path (everything not folded into
<details>) takes at most 45 minutes at the rates tools/reading_time.py documents (prose 200 words
a minute, code 200 tokens, printed output 400 words, 10 s a chart)."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import reading_time as rt  # noqa: E402

NOTEBOOKS = rt.notebooks()

#: chapters whose core path is over the limit on the day the test was written (issue 41), by how
#: much; strict xfail: the test runs, and the day a chapter's folds bring it under 45 min it
#: XPASSes, which fails the suite until its entry here is deleted. Not a weaker limit: the list
#: can only shrink.
OVER_LIMIT_NOW: dict[str, float] = {}
#: chapters whose header does not show its reading time yet: the line is written per chapter once
#: its folds are done (``python tools/reading_time.py --write notebooks/NN_x.ipynb``); strict xfail,
#: so a chapter whose line is written fails here until it leaves this set (which can only shrink)
LINES_NOT_YET_WRITTEN: set[str] = set()


def test_the_tool_doctests_pass():
    result = doctest.testmod(rt)
    assert result.attempted >= 3 and result.failed == 0


def _params():
    out = []
    for p in NOTEBOOKS:
        marks = [pytest.mark.xfail(strict=True, reason=f"core path {OVER_LIMIT_NOW[p.stem]} min over 45 on "
                                   "2026-12-06: fold reference material into <details>")] \
            if p.stem in OVER_LIMIT_NOW else []
        out.append(pytest.param(p, marks=marks, id=p.stem))
    return out


@pytest.mark.parametrize("path", _params())
def test_core_path_is_at_most_45_minutes(path):
    r = rt.reading_time(path)
    assert r.core_min <= rt.CORE_LIMIT_MIN, (
        f"{path.stem}: core path {r.core_min:.1f} min ({r.prose_words:,} prose words, {r.code_words:,} code "
        f"tokens, {r.output_words:,} output words, {r.charts} charts): fold {r.core_min - 45:.1f} min into <details>")


def test_a_chapter_is_named_by_number_or_path():
    assert rt.chapter_path("11").stem == "11_capstone"
    assert rt.chapter_path(str(NOTEBOOKS[0])) == NOTEBOOKS[0]
    with pytest.raises(ValueError, match="chapter"):
        rt.chapter_path("99")


def _line_params():
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(
        strict=True, reason="line not written yet: tools/reading_time.py --write <chapter>")]
        if p.stem in LINES_NOT_YET_WRITTEN else []) for p in NOTEBOOKS]


def test_the_pending_sets_name_real_chapters():
    stems = {p.stem for p in NOTEBOOKS}
    assert set(OVER_LIMIT_NOW) <= stems and LINES_NOT_YET_WRITTEN <= stems


@pytest.mark.parametrize("path", _line_params())
def test_every_chapter_shows_its_current_reading_time(path):
    assert rt.stored_line(path) == rt.reading_time(path).line(), (
        f"run python tools/reading_time.py --write {path.relative_to(ROOT)}")


def test_the_limit_is_the_issue_s_and_the_rates_are_documented():
    assert rt.CORE_LIMIT_MIN == 45 and rt.PROSE_WPM == 200
    doc = rt.__doc__
    for rate in (rt.PROSE_WPM, rt.CODE_WPM, rt.OUTPUT_WPM):
        assert f"{rate} " in doc
    assert f"{rt.CHART_S} s" in doc


def _nb(tmp_path, cells) -> Path:
    path = tmp_path / "99_test.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_folded_words_leave_the_core_path_and_the_count_can_fail(tmp_path):
    """400 words of prose are 2 min; the same words folded in <details> leave the core path; a
    chapter of 10,000 prose words (50 min) fails the limit."""
    prose = " ".join(["word"] * 400)
    shown = rt.reading_time(_nb(tmp_path, [{"cell_type": "markdown", "source": prose}]))
    assert shown.core_min == pytest.approx(2.0)
    folded = rt.reading_time(_nb(tmp_path, [{"cell_type": "markdown",
                                             "source": f"<details><summary>x</summary>\n\n{prose}\n</details>"}]))
    assert folded.core_min < 0.1 and folded.total_min == pytest.approx(2.0, abs=0.05)
    code = {"cell_type": "code", "source": " ".join(["x"] * 200), "outputs": [
        {"output_type": "stream", "name": "stdout", "text": " ".join(["1"] * 400)},
        {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>", "text/plain": "c"}},
        {"output_type": "execute_result", "data": {"text/markdown": f"<details>{prose}</details>",
                                                    "text/plain": "m"}}]}
    r = rt.reading_time(_nb(tmp_path, [code]))
    assert r.core_min == pytest.approx(1 + 1 + 10 / 60) and r.folded_prose_words == 400
    long = rt.reading_time(_nb(tmp_path, [{"cell_type": "markdown", "source": " ".join(["w"] * 10_000)}]))
    assert long.core_min > rt.CORE_LIMIT_MIN


def test_writing_the_line_is_idempotent(tmp_path):
    path = _nb(tmp_path, [{"cell_type": "markdown", "source": "nav"},
                          {"cell_type": "markdown", "source": "# 99 · Title\n*Sub.*\n\n**Learning goals**\n- a"}])
    assert rt.write(path) and not rt.write(path)
    header = json.loads(path.read_text())["cells"][1]["source"]
    text = "".join(header)
    assert text.count("Reading time") == 1 and rt.stored_line(path) == rt.reading_time(path).line()
    assert text.startswith("# 99 · Title\n*Sub.*\n\n*Reading time: about ")


def test_write_touches_only_the_chapters_named(tmp_path):
    """``--write`` with paths writes those chapters and leaves every other one as it was."""
    cells = [{"cell_type": "markdown", "source": "# 99 · Title\n*Sub.*\n\n**Learning goals**\n- a"}]
    named, other = tmp_path / "98_named.ipynb", tmp_path / "99_other.ipynb"
    for path in (named, other):
        path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    before = other.read_text()
    assert rt.main(["--write", str(named)]) == 0
    assert rt.stored_line(named) == rt.reading_time(named).line() and other.read_text() == before
    assert rt.main(["--check", str(named)]) == 0 and rt.main(["--check", str(other)]) == 1
