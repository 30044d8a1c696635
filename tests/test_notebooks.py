"""Every chapter is stored executed, in order, without widget state, with the anatomy the
course promises; generated navigation and chapter lists are up to date; and nbval's strict
comparison really does catch a changed number."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
sys.path.insert(0, str(ROOT / "tools"))
import navigation  # noqa: E402


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def text(cell):
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def test_there_are_chapters():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(load(path))]
    assert None not in counts, f"{path.name} has unexecuted code cells"
    assert counts == list(range(1, len(counts) + 1)), f"{path.name} ran out of order: {counts}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_errors_widget_state_or_heavy_outputs(path):
    nb = load(path)
    assert "widgets" not in nb["metadata"], "saved widget state"
    for cell in code_cells(nb):
        for out in cell["outputs"]:
            assert out["output_type"] != "error", f"{path.name}: error output in {text(cell)[:60]}"
            if out["output_type"] == "stream":
                assert out["name"] == "stdout" or not out["text"], \
                    f"{path.name}: stderr output (a warning?) in {text(cell)[:60]}: {out['text'][:200]}"
            size = len(json.dumps(out))
            assert size < 150_000, f"{path.name}: {size}-byte output in {text(cell)[:60]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_network_at_run_time(path):
    raw = path.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=[\"']https?://", raw), "output loads a remote script"
    assert "vnd.vegalite" not in raw, "mimetype renderer output (broken in JupyterLab 4.6)"
    for cell in code_cells(load(path)):
        assert not re.search(r"\b(requests|urllib\.request|http\.client)\b|\.read_csv\(['\"]https?:",
                             text(cell)), f"{path.name} fetches from the network"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_anatomy(path):
    nb = load(path)
    markdown = "\n".join(text(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert re.search(r"^# .+", markdown, flags=re.M), "title"
    for heading in ["Learning goals", "Summary"]:
        assert heading in markdown, f"{path.name} lacks {heading}"
    assert re.search(r"^## Explore", markdown, flags=re.M), f"{path.name} lacks an Explore section"
    assert re.search(r"^## Worked problem", markdown, flags=re.M), f"{path.name} lacks a worked problem"
    assert re.search(r"^## Exercises", markdown, flags=re.M), f"{path.name} lacks exercises"
    first_code = text(code_cells(nb)[0])
    assert "notebook.setup()" in first_code, "the setup cell calls notebook.setup()"
    checks = [c for c in code_cells(nb) if re.search(r"\.check\(", text(c))]
    assert len(checks) >= 3, f"{path.name} has {len(checks)} self-checking exercises"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_widget_cells_ignore_output(path):
    for cell in code_cells(load(path)):
        has_widget = any("application/vnd.jupyter.widget-view+json" in out.get("data", {})
                         for out in cell["outputs"])
        if has_widget:
            assert "nbval-ignore-output" in cell["metadata"].get("tags", []), text(cell)[:60]


def test_navigation_and_chapter_lists_are_current():
    assert navigation.stale() == []


def test_readme_lists_every_chapter():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert f"(notebooks/{path.name})" in readme


def test_nbval_strict_mode_catches_a_changed_digit(tmp_path):
    """A stored output with one digit changed must fail nbval: the comparison is real."""
    nb = load(ROOT / "notebooks" / "00_start_here.ipynb")
    changed = False
    for cell in code_cells(nb):
        for out in cell["outputs"]:
            if out["output_type"] == "stream" and "GiB =" in "".join(out["text"]) and not changed:
                out["text"] = re.sub(r"(\d)", lambda m: str((int(m.group(1)) + 1) % 10),
                                     "".join(out["text"]), count=1)
                changed = True
    assert changed
    copy = tmp_path / "copy.ipynb"
    copy.write_text(json.dumps(nb), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--nbval", "--nbval-cell-timeout=120",
         f"--nbval-sanitize-with={ROOT / 'tools' / 'nbval_sanitize.cfg'}",
         "-o", "addopts=", "-o", "filterwarnings=", str(copy)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0, result.stdout[-2000:]
    assert "1 failed" in result.stdout, result.stdout[-2000:]
