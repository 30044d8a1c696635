"""Every source says which Neuron SDK release it was read at and whether it is still current;
no notebook links a page AWS has removed (issue 27; data/README.md, sources.csv)."""

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "trainium_lab" / "data" / "sources.csv"
STATUSES = {"current", "legacy", "archived", "removed"}
VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def _rows():
    with SOURCES.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _urls(text: str) -> set[str]:
    return {u.rstrip(".,;)") for u in re.findall(r"https?://[^\s\"'<>)\\]+", text)}


def _notebook_urls() -> dict[str, set[str]]:
    out = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells)
        for c in cells:   # stored outputs are what a reader sees too
            for o in c.get("outputs", []):
                for v in o.get("data", {}).values():
                    text += "\n" + ("".join(v) if isinstance(v, list) else str(v))
                text += "\n" + "".join(o.get("text", ""))
        out[nb.name] = _urls(text)
    return out


def test_every_source_has_a_version_and_a_status():
    rows = _rows()
    assert rows
    for r in rows:
        assert r["status"] in STATUSES, r["source_id"]
        v = r["sdk_version"]
        neuron_docs = ("awsdocs-neuron" in r["reference"] or "aws-neuron-sdk@" in r["reference"]
                       or "aws-neuron-sdk:" in r["reference"])
        if neuron_docs:
            assert VERSION.match(v), (r["source_id"], v)
        else:
            assert v == "n/a" or VERSION.match(v), (r["source_id"], v)


def test_removed_pages_are_recorded():
    removed = {r["source_id"] for r in _rows() if r["status"] == "removed"}
    # deleted from the Neuron docs in 2.27.0 (commit 337e6041); chapter 08 used to link both
    assert {"aws-nki-rmsnorm-tutorial", "aws-nki-known-issues"} <= removed


def test_no_notebook_links_a_removed_page():
    removed = {u for r in _rows() if r["status"] == "removed" for u in _urls(r["reference"])}
    assert removed
    for name, urls in _notebook_urls().items():
        assert not urls & removed, (name, sorted(urls & removed))


def test_the_check_catches_a_removed_link():
    removed = {u for r in _rows() if r["status"] == "removed" for u in _urls(r["reference"])}
    text = f"see [the tutorial]({sorted(removed)[0]})."
    assert _urls(text) & removed


@pytest.mark.parametrize("source_id", ["aws-torchneuronx-training-guide", "aws-neuronx-mixed-precision"])
def test_archived_guides_are_marked(source_id):
    row = {r["source_id"]: r for r in _rows()}[source_id]
    assert row["status"] == "archived"


def _markdown(nb_path) -> str:
    cells = json.loads(nb_path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("chapter", ["07_compilation", "08_neuroncore_kernels"])
def test_links_to_legacy_or_archived_pages_say_so(chapter):
    """Rule 5: a legacy path is marked legacy. Every link in chapters 07 and 08 to a page whose
    status is legacy or archived has "legacy" or "archived" within 300 characters of it."""
    text = _markdown(ROOT / "notebooks" / f"{chapter}.ipynb")
    checked = 0
    for r in _rows():
        if r["status"] not in ("legacy", "archived"):
            continue
        for url in _urls(r["reference"]):
            for m in re.finditer(re.escape(url), text):
                around = text[max(0, m.start() - 300):m.end() + 300].lower()
                assert "legacy" in around or "archived" in around, (chapter, r["source_id"])
                checked += 1
    if chapter.startswith("07"):
        assert checked >= 4   # the cache page, neuron_parallel_compile, the archived training guide

