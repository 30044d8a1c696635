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
