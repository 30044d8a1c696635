"""Every link to the current Neuron documentation points at a page of the snapshot the course cites.

The course describes Neuron 2.32 as the documentation snapshot ``aws-neuron/aws-neuron-sdk@81ce03a``
states it, and must never link a page that snapshot no longer has (a moved or removed page).
``tests/neuron_docs_pages_2_32.txt`` lists every page source of that snapshot. A link to
``…/en/latest/<path>.html`` or ``…/en/v2.32.0/<path>.html`` passes when ``<path>`` is one of them
(as ``.rst``, ``.md``, ``.ipynb`` or ``.txt``); links pinned to an older release (``/en/v2.27.0/``)
name that release's pages on purpose and are not checked. Checked: every notebook (sources and
outputs), the data tables, the package's code, the README and ``docs/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES_FILE = Path(__file__).with_name("neuron_docs_pages_2_32.txt")
LINK = re.compile(r"https://awsdocs-neuron\.readthedocs-hosted\.com/en/(latest|v2\.32\.0)/([^\s)\"'<>;,\\]*)")
SUFFIXES = (".rst", ".md", ".ipynb", ".txt")


def pages() -> set[str]:
    return {line.strip() for line in PAGES_FILE.read_text().splitlines() if line.strip() and not line.startswith("#")}


def page_of(path: str) -> str:
    """The page a link's path names: anchors and query dropped, ``.html`` off, a directory's index;
    an API page Sphinx generates (``nki/api/generated/nki.isa.activation``) is its module's source
    (``nki/api/nki.isa``)."""
    path = path.split("#")[0].split("?")[0].rstrip(".")
    if path == "" or path.endswith("/"):
        path += "index.html"
    path = path[: -len(".html")] if path.endswith(".html") else path
    if "/generated/" in path:
        folder, name = path.rsplit("/generated/", 1)
        path = f"{folder}/{name.rsplit('.', 1)[0]}"
    return path


def missing(text: str, known: set[str]) -> list[str]:
    """The links in ``text`` whose page is not in ``known``."""
    return [m.group(0).rstrip(".") for m in LINK.finditer(text)
            if not any(page_of(m.group(2)) + s in known for s in SUFFIXES)]


def files() -> list[Path]:
    out = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "trainium_lab" / "data").glob("*.csv"))
    out += sorted((ROOT / "trainium_lab").rglob("*.py")) + sorted((ROOT / "docs").glob("*.md"))
    return out + [ROOT / "README.md", ROOT / "trainium_lab" / "data" / "README.md"]


def test_the_page_list_is_the_snapshot():
    known = pages()
    assert len(known) > 1000
    assert {"about-neuron/whats-new.rst", "nki/get-started/about/nki-dma-overview.rst",
            "neuron-runtime/explore/compute-comm-overlap.rst"} <= known


def test_the_check_finds_a_moved_page():
    known = pages()
    moved = "see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/about/nki-dma-overview.html."
    kept = "see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/get-started/about/nki-dma-overview.html."
    pinned = "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.27.0/release-notes/2.27.0/compiler.html"
    assert missing(moved, known) == [moved[4:-1]]
    assert missing(kept, known) == [] and missing(pinned, known) == []
    assert missing("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/explore/"
                   "compute-comm-overlap.html#token-threading", known) == []
    generated = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.activation.html"
    assert missing(generated, known) == [] and missing(generated.replace("nki.isa.", "nki.nosuch."), known)


@pytest.mark.parametrize("path", files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_name_pages_of_the_snapshot(path):
    bad = missing(path.read_text(encoding="utf-8"), pages())
    assert not bad, f"{path.relative_to(ROOT)} links pages the 2.32 snapshot does not have: {sorted(set(bad))}"
