"""The status table of what ships (data/components.csv, issue 40) and THE PROSE TEST: no chapter calls a
component current, default or recommended that the table says is not (nor a beta "recommended" without
its beta status), and no chapter names a Neuron component the table lacks.

Sources: AWS Neuron docs at aws-neuron/aws-neuron-sdk@81ce03a (Neuron 2.32.0): whats-new.rst; the
announcements of NxD Inference / NxD Core maintenance (2.30), NxD Training end of support (2.28 the last),
Neuron Explorer replacing Neuron Profiler (2.30), Transformers NeuronX end of support (2.26);
frameworks/torch/index.rst ("not included in Neuron 2.32.0 and later versions");
frameworks/torch/pytorch-native-overview.rst ("closed Beta program"); release-notes/components/nki.rst.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainium_lab import components, frameworks, specs

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the table itself


def test_every_row_has_a_known_status_kind_chips_and_a_2_32_source():
    df = specs.read_data_csv("components.csv")
    assert list(df.columns[:9]) == ["component", "name", "kind", "status", "status_release", "chips",
                                    "replaced_by", "source_id", "note"]
    import csv
    with (ROOT / "data" / "sources.csv").open(newline="") as fh:
        rows = {r["source_id"]: r for r in csv.DictReader(fh)}
    for r in df.itertuples():
        assert r.status in components.STATUSES and r.kind in components.KINDS, r.component
        assert set(r.chips.split(";")) <= set(components.CHIPS), r.component
        assert re.fullmatch(r"(2\.\d\d)?", str(r.status_release)), r.component
        ref = rows[r.source_id]
        # every row cites a page of the 2.32 snapshot, still present there
        assert ref["sdk_version"] == "2.32.0" and ref["status"] == "current", (r.component, r.source_id)
        assert "aws-neuron-sdk@81ce03a" in ref["reference"] or "aws-neuron-sdk:" in ref["reference"], r.component


def test_every_component_the_issue_names_is_in_the_table():
    needed = {"torchneuron", "torch-neuronx", "jax-neuronx", "nxd-core", "nxd-training", "nxd-inference",
              "transformers-neuronx", "vllm-neuron", "nki", "nki-library", "neuron-explorer", "neuron-profile",
              "neuron-parallel-compile", "nccom-test", "neuronx-cc"}
    assert needed <= set(components.component_keys())


def test_statuses_as_the_2_32_pages_state_them():
    c = components.component
    # announce-maintenance-nxdi-nxd-core-inference.rst: "Starting with Neuron Release 2.30.0 ... maintenance mode"
    assert (c("nxd-inference").status, c("nxd-inference").status_release) == ("maintenance", "2.30")
    assert c("nxd-inference").replaced_by == "vllm-neuron"
    # pytorch-native-overview.rst l.22: "only available as part of a closed Beta program"; FAQ: compile on Trn2/Trn3
    assert c("torchneuron").status == "closed-beta" and c("torchneuron").chips == ("trn2", "trn3")
    # frameworks/torch/index.rst: torch-neuronx "not included in Neuron 2.32.0 and later versions"
    assert (c("torch-neuronx").status, c("torch-neuronx").status_release) == ("removed", "2.32")
    assert (c("neuron-parallel-compile").status, c("neuron-parallel-compile").status_release) == ("removed", "2.32")
    # whats-new 2.32: "The neuron-explorer capture CLI replaces neuron-profile capture"
    assert c("neuron-profile").replaced_by == "neuron-explorer" and not c("neuron-profile").current
    # whats-new 2026-07-20: vLLM Neuron Beta, "for serving models on Trn2 and Trn3"
    assert (c("vllm-neuron").status, c("vllm-neuron").chips) == ("beta", ("trn2", "trn3"))
    # nki.rst: NKI 0.3.0 (2.29) "for General Availability"
    assert (c("nki").status, c("nki").status_release) == ("ga", "2.29")
    # whats-new 2.29.0: "Neuron Explorer is now out of Beta and Stable"
    assert (c("neuron-explorer").status, c("neuron-explorer").status_release) == ("ga", "2.29")


def test_labels_and_current():
    assert components.status_label("torchneuron") == "closed beta since 2.29"
    assert components.status_label("nxd-training") == "end of support after 2.28"
    assert components.status_label("nxd-core") == "maintenance since 2.30"
    assert components.status_label("neuron-profile") == "removed in 2.30"
    assert components.status_label("vllm-neuron") == "beta"
    current = {k for k in components.component_keys() if components.is_current(k)}
    assert {"torchneuron", "vllm-neuron", "nki", "nki-library", "neuron-explorer"} <= current
    assert not current & {"nxd-inference", "nxd-training", "nxd-core", "torch-neuronx", "transformers-neuronx",
                          "neuron-profile", "neuron-parallel-compile"}
    assert components.CURRENT_STATUSES == ("ga", "beta", "closed-beta")


def test_replacements_are_current_or_say_so():
    for c in components.components():
        if c.replaced_by:
            assert c.replaced_by in components.component_keys()
            assert not c.current, c.component   # only something that no longer ships is replaced


def test_table_frame_and_reprs():
    t = components.components_table()
    assert len(t) == len(components.components()) and t.component.is_unique
    assert "maintenance since 2.30" in components.component("nxd-inference")._repr_markdown_()
    assert "replaced by vLLM Neuron" in components.component("nxd-inference")._repr_markdown_()


@pytest.mark.parametrize("bad", ["nxd", "", None, 3, "NxD Inference"])
def test_unknown_component_raises_value_error_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="key"):
        components.component(bad)


def test_mentions_rejects_non_text():
    with pytest.raises(ValueError, match="text"):
        components.mentions(None)


# ----------------------------------------------------------------------------- frameworks read the table


def test_frameworks_read_status_from_the_table():
    for f in frameworks.frameworks():
        c = components.component(f.component)
        assert (f.status, f.status_release, f.current) == (c.status, c.status_release, c.current)
    assert frameworks.framework("nxd").component == "nxd-training"
    assert not frameworks.framework("nxd").current
    assert frameworks.framework("torchneuron").current and frameworks.framework("jax").current
    df = specs.read_data_csv("frameworks.csv")
    assert not set(df.field) & {"status", "status_release"}   # one home for a status


# ----------------------------------------------------------------------------- THE PROSE TEST

#: a clause calls a component current, the default or recommended
CLAIM = re.compile(
    r"\b(?:current(?:ly)?|recommended|recommends?|today's|state[- ]of[- ]the[- ]art"
    r"|(?:the )?default (?:framework|library|stack|path|tool|compiler|runtime|choice|way|serving \w+)"
    r"|(?:the|a) (?:supported|standard|usual|go-to) (?:path|framework|library|tool|stack|way)"
    r"|the (?:path|way|stack|tool|library|framework) (?:to use|AWS ships|Neuron ships|for (?:training|serving))"
    r"|the (?:serving|training|inference|profiling) (?:library|stack|framework|path|tool))\b",
    re.IGNORECASE)
#: ... unless the same clause gives the status away
QUALIFIER = re.compile(
    r"maintenance|end[- ]of[- ]support|legacy|removed|no longer|deprecated|last release|replaced|replaces"
    r"|retired|not (?:shipped|included|in)|gone|archived|or earlier|(?:until|through|up to|before|ended with) (?:Neuron )?2\.\d\d"
    r"|not (?:the )?(?:current|recommended|default)|instead of|migrat|used to|once|was (?:the|a)|were",
    re.IGNORECASE)
BETA_WORDS = {"beta": re.compile(r"\bbeta\b", re.I),
              "closed-beta": re.compile(r"\b(?:closed|private)[- ]beta\b", re.I)}
#: lower-case Neuron tool or package identifiers (``neuron-foo``, ``nxd_foo``...) a chapter may write
IDENTIFIER = re.compile(r"(?<![\w/.-])(?:torch[-_]neuron\w*|jax[-_]neuron\w*|neuronx?[-_][a-z][a-z0-9_]*(?:-[a-z0-9_]+)*"
                        r"|nccom[-_][a-z]+|nki[-_][a-z]+(?:-[a-z]+)*|nxd[-_][a-z]+|transformers[-_]neuronx"
                        r"|vllm[-_]neuron|libneuron\w*|optimum[-_]neuron)(?![\w/-])")
#: identifiers that are not SDK components: names of AWS doc pages, dtypes, our own files
NOT_COMPONENTS = {"neuron_cc_flags", "neuron-safe", "nki_api", "nki_simulator", "nki_reference", "neuron_core",
                  "neuronx_distributed"}   # the import name of nxd-core, matched below through its alias


def _clauses(text: str) -> list[str]:
    text = re.sub(r"\]\([^)]*\)", "]", text)                 # markdown link targets
    text = re.sub(r"https?://\S+", " ", text)                  # bare URLs
    text = re.sub(r"<[^>]+>", " ", text)                       # HTML tags
    # blocks: paragraphs, list items, table cells, headings; a hard-wrapped line continues its sentence
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*+>#|]|\d+\.)\s)|\|", text)
    out = []
    for block in blocks:
        sentence = " ".join(block.split())
        out += re.split(r"(?<=[.!?:])\s+(?=[A-Z`*(\"“])|;\s*|\s+—\s+", sentence)
    return [p for p in out if p.strip()]


def prose_problems(text: str) -> list[str]:
    """Each clause of ``text`` that calls a non-current component current/default/recommended, calls a
    beta one recommended without its beta status, or names a Neuron identifier the table lacks."""
    out = []
    for clause in _clauses(text):
        named = components.mentions(clause)
        claim = CLAIM.search(clause)
        for key in named:
            c = components.component(key)
            if claim and not c.current and not QUALIFIER.search(clause):
                out.append(f"{key} ({c.label}) called {claim.group(0)!r}: {clause.strip()[:160]}")
            if (c.status in BETA_WORDS and re.search(r"recommend|the default", clause, re.I)
                    and not BETA_WORDS[c.status].search(clause)):
                out.append(f"{key} ({c.label}) called recommended without its status: {clause.strip()[:160]}")
        for ident in IDENTIFIER.findall(clause):
            if ident.lower() in NOT_COMPONENTS and ident.lower() != "neuronx_distributed":
                continue
            if not components.mentions(ident):
                out.append(f"names {ident!r}, which data/components.csv lacks: {clause.strip()[:160]}")
    return out


def _chapter_prose() -> dict[str, str]:
    out = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for i, c in enumerate(cells):
            if c["cell_type"] == "markdown":
                out[f"{nb.name}[{i}]"] = "".join(c["source"])
    cheat = ROOT / "docs" / "cheatsheet.md"
    if cheat.exists():
        out["docs/cheatsheet.md"] = cheat.read_text()
    return out


@pytest.mark.parametrize("bad", [
    "NxD Inference is the current serving library on Trainium.",
    "On Trainium, NxD Inference is the serving library.",
    "Profile the kernel with neuron-profile, the recommended tool.",
    "We recommend TorchNeuron for every new training job.",
    "Warm the cache with neuron_parallel_compile, the default path for torch jobs.",
    "For training, torch-neuronx is the path to use.",
    "Serve it through neuron-serve, which ships with the SDK.",          # a name the table lacks
    "Compile the graph with nxd_compile first.",                         # another
])
def test_the_prose_test_fails_on_a_bad_sentence(bad):
    assert prose_problems(bad), bad


@pytest.mark.parametrize("good", [
    "NxD Inference is in maintenance since 2.30; vLLM Neuron (beta) is the current serving path.",
    "neuron-profile was the recommended profiler until 2.30; Neuron Explorer replaces it.",
    "AWS recommends TorchNeuron, a closed beta that compiles only on Trn2 or Trn3.",
    "The legacy neuron_parallel_compile (removed in 2.32) was the default path for torch-neuronx jobs.",
    "Compile on any host with neuronx-cc; count collectives with nccom-test.",
    "NxD's default ZeRO stage is 1.",                                    # a default of NxD, not NxD as default
])
def test_the_prose_test_passes_a_good_sentence(good):
    assert prose_problems(good) == [], good


def test_no_chapter_or_cheatsheet_misstates_what_ships():
    problems = [f"{where}: {p}" for where, text in _chapter_prose().items() for p in prose_problems(text)]
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- legacy only with its release

#: a clause that states a status gives the release too (issue 40: "no chapter names a tool 2.32 does
#: not ship except as legacy with the release that ended it")
RELEASE = re.compile(r"\b2\.\d\d\b")

#: chapters other engineers own that still name a component without its status and release (found
#: 2026-12-06 by this test; see the h40 report). Delete a pair once its chapter states the status: the
#: test fails on a stale pair as it does on a new one, so the list only shrinks.
KNOWN_OUTSTANDING: set[tuple[str, str]] = set()   # every chapter states them now


def unstated_statuses(prose: dict[str, str]) -> set[tuple[str, str]]:
    """``(chapter, component)`` for each component no longer current that a chapter names without
    stating, in at least one clause that names it, its status and a release number."""
    named, stated = set(), set()
    for where, text in prose.items():
        chapter = where.split("[")[0]
        for clause in _clauses(text):
            for key in components.mentions(clause):
                if components.is_current(key):
                    continue
                named.add((chapter, key))
                if QUALIFIER.search(clause) and RELEASE.search(clause):
                    stated.add((chapter, key))
    return named - stated


def test_the_release_rule_can_fail():
    bad = {"x.ipynb[1]": "Pre-compile with neuron_parallel_compile.",
           "x.ipynb[2]": "NxD Inference serves it; it is legacy."}       # a status but no release
    assert unstated_statuses(bad) == {("x.ipynb", "neuron-parallel-compile"), ("x.ipynb", "nxd-inference")}
    good = {"y.ipynb[1]": "neuron_parallel_compile (removed in Neuron 2.32) pre-compiled graphs.",
            "y.ipynb[2]": "Later, neuron_parallel_compile warmed the cache."}   # stated once is enough
    assert unstated_statuses(good) == set()


def test_every_chapter_states_the_status_of_what_no_longer_ships():
    found = unstated_statuses(_chapter_prose())
    new = found - KNOWN_OUTSTANDING
    stale = KNOWN_OUTSTANDING - found
    assert not new, f"name these with their status and release (components.status_label): {sorted(new)}"
    assert not stale, f"fixed: delete these pairs from KNOWN_OUTSTANDING: {sorted(stale)}"
