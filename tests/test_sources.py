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
