"""The cheat sheet is generated from the package and up to date; every chapter links to it."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cheatsheet_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "cheatsheet.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cheatsheet_links_every_chapter_it_names():
    text = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    import re

    for target in re.findall(r"\(\.\./notebooks/([^)]+)\)", text):
        assert (ROOT / "notebooks" / target).is_file(), target


def test_every_chapter_summary_links_the_cheatsheet():
    import json
    import re

    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        summary = [("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"
                   and re.search(r"^## Summary", "".join(c["source"]), flags=re.M)]
        assert summary, f"{path.name} has no ## Summary"
        assert "cheatsheet.md" in summary[0], f"{path.name}: the summary does not link the cheat sheet"


def _cheatsheet():
    sys.path.insert(0, str(ROOT / "tools"))
    import cheatsheet

    return cheatsheet


def test_every_numbers_to_remember_row_of_every_chapter_is_on_the_cheatsheet():
    """Each row of each chapter's Numbers-to-remember box is covered by exactly one cheat-sheet row
    (its ``covers`` fragment): a row another engineer adds to a chapter fails here, by name, until
    tools/cheatsheet.py computes it."""
    problems = _cheatsheet().coverage()
    assert not problems, "\n".join(problems)


def test_the_box_of_every_chapter_is_read():
    """The parser finds the rows of every chapter's box, quoted or not (a parser that reads
    nothing would make the coverage test pass for nothing)."""
    cs = _cheatsheet()
    counts = {ch: len(cs.numbers_to_remember(stem)) for ch, stem in cs.CHAPTERS.items()}
    assert all(n >= 3 for n in counts.values()), counts
    assert {r[0] for r in cs.rows()} == set(cs.CHAPTERS), "a chapter has no row on the cheat sheet"


def test_the_parser_reads_quoted_and_plain_tables(tmp_path, monkeypatch):
    import json

    cs = _cheatsheet()
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["## Numbers to remember\n", "\n", "| rule | from |\n",
                                              "|---|---|\n", "| plain row | x |\n"]},
        {"cell_type": "markdown", "source": ["> **Numbers to remember**\n", ">\n", "> | rule | from |\n",
                                              "> |---|---|\n", "> | quoted row | y |\n"]},
        {"cell_type": "markdown", "source": ["## Explore\n", "| not a rule | z |\n"]}]}
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "99_test.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(cs, "ROOT", tmp_path)
    assert cs.numbers_to_remember("99_test") == ["plain row", "quoted row"]


def test_the_405b_row_is_chapter_11s_plan_at_the_bandwidth_it_prints():
    """Issue 41: the sheet said 3.1 % lost 'at 10 GB/s' from a plan made at the default bandwidth;
    it now takes chapter 11's arguments from planning.CAPSTONE_405B_RUN."""
    from trainium_lab import planning
    from trainium_lab.units import GB

    p = planning.capstone_405b_plan()
    row = next(r for r in _cheatsheet().rows() if "at thousands of chips" in r[1])
    assert f"{p.results['lost_fraction']:.1%} lost at {p.inputs['checkpoint_write_bytes_per_s'] / GB:,.0f} GB/s" in row[4]
    assert planning.CAPSTONE_405B_RUN["checkpoint_write_bytes_per_s"] == 10 * GB


def test_calibration_summary_is_labelled_and_quotes_out_of_sample_when_available():
    import pandas as pd

    cs = _cheatsheet()
    in_sample = pd.Series({"n_rows": 53, "median_abs_error": 0.112, "max_abs_error": 0.433})
    assert cs._summary_figures(in_sample) == "53 rows: median 11.2%, largest 43.3% (in sample)"
    both = pd.concat([in_sample, pd.Series({cs.OUT_OF_SAMPLE_COLUMNS[0]: 0.15, cs.OUT_OF_SAMPLE_COLUMNS[1]: 0.3})])
    assert cs._summary_figures(both) == ("53 rows: out of sample median 15.0%, largest 30.0% "
                                         "(fit: median 11.2%, largest 43.3%)")
    strict = pd.concat([both, pd.Series({"median_without_set_error": 0.297, "max_without_set_error": 0.717})])
    assert "; whole set left out median 29.7%, largest 71.7% (fit:" in cs._summary_figures(strict)
