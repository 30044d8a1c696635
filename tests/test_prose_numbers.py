"""Every number in a chapter's prose is printed by a cell or carries its source (issue 41, point 2).

``tools/prose_numbers.py`` reads every markdown cell of ``notebooks/NN_*.ipynb`` and takes every
**quantity** in it. A quantity is a number that

* carries a unit of measure (B, KB…PB, KiB…PiB, their /s rates, bits, Gbps, FLOPs, FLOP/s with
  prefixes, ns…days, %, ×/times, USD/$, W, Hz, tokens/s), or
* has decimals (0.288, 4.48, 2.4e-4), or
* is a whole number of 1,000 or more (16,384, 27,000).

It is **not a quantity** (rule iv), and not looked at, when it is: inside a code span, a link
target, an HTML tag or the generated navigation and reading-time lines; an identifier or a name
(a number glued to letters: 405B, 70B, Trn2, FP8, TP64, trn2.48xlarge, 3.5h; or after a naming
word: Neuron 2.32, SDK 2.10, Llama 3, chapter 05, Q9, Theorem 3.11, §4.2.3, LNC=2, TP 8); a list
of chapter or question numbers; list numbering; a year or a date (2024, 2026-12-05, 12/02); a
version (2.27.0); a power written as a power ($10^9$, $2^{30}$, 10¹⁶): a unit or a scale; a
unit's definition (86,400 s a day, 3,600, 1,024, 1.074 GiB per GB); a whole number below 1,000
with no unit (a count in the text's structure: "4 instances", "TP 8", "16 ranks"; a coefficient
or exponent in a formula).

A quantity passes when one of these holds, tried in this order:

1. **printed** (rule i) — a stored output of the same notebook (stdout, text/plain, text/markdown,
   the text of an HTML table; not SVG charts) prints a number that the prose's figure is, at the
   prose's precision: the printed value rounded to the prose's digits. A round whole number is
   read to its significant digits, at least two (27,000 means 26,500–27,499; 700 means 695–704). Units: a prose unit
   and a printed unit must be of the same family and are scaled within it (1.3 ms is 1,270 µs);
   GB and GiB, GB/s and GiB/s are different families and never match; a prose percentage also
   matches a printed fraction (13.5 % and 0.135), and a prose fraction a printed percentage; a printed number without a unit (a table cell)
   matches any unit. Scientific notation is read as its value (2.4e-4, 2.4 × 10⁻⁴, $2.4 \\times
   10^{-4}$), thousands separators are dropped (LaTeX ``57{,}344`` too), and the first number of a
   range takes the range's unit ("1–2 µs" states 1 µs and 2 µs).
2. **sourced** (rule ii) — its sentence carries its source: a link to a web page (not Binder), a
   ``data/…`` path, a ``data/sources.csv`` id in backticks or brackets, a source's title from
   data/sources.csv in italics or quotes (AWS's page *Compute-Communication Overlap in Neuron*), an
   author-year citation (Korthikanti et al. 2022; Kwon et al. (2023); DeepSeek-AI 2024, …) or an
   arXiv id. A sentence ends at '.', '?' or
   '!' before a capital, at a blank line, a list item, a heading and a table cell.
3. **derived** (rule iii) — it is an operand of a by-hand derivation that the **next cell, a code
   cell,** checks: a chain of numbers joined by operators (×, ÷, /, +, −, →, ≤, "per", ``\\times``,
   ``\\frac``, ``\\sqrt``) that contains ``=`` or ``≈``, in a markdown cell immediately followed by
   a code cell whose output prints one of the chain's results: a number after its first ``=``/``≈``,
   or one later in the same sentence (the conclusion: "= 16.7, so **17 chips**"; a count
   conclusion must be printed with its noun, "17 chips").
4. **input** (rule iv's twin for scenarios) — it is a literal in the source of the code cell right
   before the markdown cell or of one of the next two code cells (the scenario the cell computes),
   or in the solution of an exercise such a cell checks (``chNN.qK.check(``): a premise the code
   visibly uses, stated at least to the literal's digits (35 % repeats a literal 0.35).

There is no allow-list: every chapter must have no unaccounted quantity.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import prose_numbers as pn  # noqa: E402

NOTEBOOKS = pn.notebooks()

#: chapters whose code cells another engineer changes this session (405B plan, issue 39): their
#: markdown is fixed here, their numbers that depend on the new plan wait for the re-execution


def _params():
    return [pytest.param(p, id=p.stem[:2]) for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def ids():
    return pn.source_ids()


@pytest.mark.parametrize("path", _params())
def test_every_prose_number_is_printed_sourced_or_derived(path, ids):
    found = pn.check_notebook(json.loads(path.read_text(encoding="utf-8")), path.stem[:2], ids)
    assert len(found) >= 20, f"{path.stem}: only {len(found)} quantities found: the extractor broke"
    missing = [str(f) for f in found if not f.ok]
    assert not missing, (f"{len(missing)} number(s) typed in {path.stem}'s prose with no cell printing "
                         "them and no source (print it from a cell, or attach the source):\n  " + "\n  ".join(missing))


# --------------------------------------------------------------------------- the checker can fail


def _nb(*cells):
    out = []
    for kind, text, *printed in cells:
        cell = {"cell_type": kind, "source": text, "metadata": {}}
        if kind == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": p} for p in printed]
        out.append(cell)
    return {"cells": out}


def _verdicts(nb):
    return [(f.quantity.text, f.reason) for f in pn.check_notebook(nb, "99", pn.source_ids())]


def test_a_typed_unsourced_quantity_fails():
    nb = _nb(("markdown", "Over EFA the link moves 47.3 GB/s per chip."), ("code", "x = 1", "done\n"))
    assert _verdicts(nb) == [("47.3 GB/s", "")]


def test_a_printed_quantity_passes_at_the_prose_precision():
    nb = _nb(("markdown", "Over EFA the link moves 47.3 GB/s per chip."),
             ("code", "print(rate)", "EFA: 47.31 GB/s per chip\n"))
    assert _verdicts(nb) == [("47.3 GB/s", "printed")]
    # printed elsewhere in the notebook counts too, and the units scale within a family
    nb = _nb(("code", "print(t)", "step 1,270 µs\n"), ("markdown", "A step takes 1.3 ms."))
    assert _verdicts(nb) == [("1.3 ms", "printed")]


def test_gb_and_gib_never_match():
    nb = _nb(("markdown", "The link moves 47.3 GB/s."), ("code", "print(r)", "47.3 GiB/s\n"))
    assert _verdicts(nb) == [("47.3 GB/s", "")]
    assert not pn.matches(pn.printed_quantities("96 GB")[0], pn.printed_quantities("96 GiB")[0])


def test_another_figure_does_not_pass():
    nb = _nb(("markdown", "The link moves 47.3 GB/s."), ("code", "print(r)", "46.3 GB/s\n"))
    assert _verdicts(nb) == [("47.3 GB/s", "")]


def test_a_sourced_quantity_passes():
    for text in ("The link moves 47.3 GB/s ([AWS, Trn2 architecture](https://awsdocs-neuron.example/trn2.html)).",
                 "The link moves 47.3 GB/s (`data/links.csv`).",
                 "The link moves 47.3 GB/s (Lockwood et al. 2025).",
                 "The link moves 47.3 GB/s (source `aws-trainium2`)."):
        nb = _nb(("markdown", text))
        assert _verdicts(nb) == [("47.3 GB/s", "sourced")], text
    # a capitalised word before a number is no citation, and the source must be in the same sentence
    assert _verdicts(_nb(("markdown", "Take 2048 tokens: the link moves 47.3 GB/s."))) == [("47.3 GB/s", "")]
    nb = _nb(("markdown", "See [AWS](https://aws.example/x). The link moves 47.3 GB/s."))
    assert _verdicts(nb) == [("47.3 GB/s", "")]


def test_a_derivation_passes_only_when_the_next_cell_prints_its_result():
    text = "*By hand:* 70 × 16 B = 1,120 GB, and 1,120 ÷ 62.4 GB = 17.9, so **18 chips**."
    checked = _nb(("markdown", text), ("code", "print(n)", "1,120 GB -> 18 chips\n"))
    assert {r for _, r in _verdicts(checked)} <= {"printed", "derived"}
    assert ("62.4 GB", "derived") in _verdicts(checked)
    unchecked = _nb(("markdown", text), ("code", "print(n)", "something else\n"))
    assert ("62.4 GB", "") in _verdicts(unchecked)
    # a code cell further away does not check it
    far = _nb(("markdown", text), ("markdown", "Now check it."), ("code", "print(n)", "1,120 GB -> 18 chips\n"))
    assert ("62.4 GB", "") in _verdicts(far)


def test_names_versions_and_counts_are_not_quantities():
    nb = _nb(("markdown", "Llama 3 405B on 64 Trn2 chips (TP64 at LNC=2, Neuron 2.32, chapter 05, 2025): "
                          "$2\\frac{n-1}{n}$ of $10^9$ bytes; 1. a list; 4 instances."))
    assert _verdicts(nb) == []


def test_scenario_inputs_of_the_next_cell_pass():
    nb = _nb(("markdown", "Take a sequence of 4,096 tokens and hidden size 16,384."),
             ("code", "act = 2 * 4096 * 16_384", "done\n"))
    assert _verdicts(nb) == [("4,096", "input"), ("16,384", "input")]


def test_a_range_states_both_ends_in_its_unit():
    nb = _nb(("markdown", "A hop costs 1–2 µs."), ("code", "print(x)", "per-hop latency 2 µs\n"))
    assert _verdicts(nb) == [("1", ""), ("2 µs", "printed")]
    nb = _nb(("markdown", "A hop costs 1–2 µs."), ("code", "print(x)", "per-hop latency 1-2 us\n"))
    assert [r for _, r in _verdicts(nb)] == ["printed", "printed"]
