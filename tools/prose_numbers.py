#!/usr/bin/env python3
"""Find the numbers a chapter's prose types by hand (issue 41, point 2).

    python tools/prose_numbers.py              # every unaccounted number, chapter by chapter
    python tools/prose_numbers.py 03 --all     # every quantity of chapter 03 and why it passes

A chapter's markdown may state a quantity only if one of these holds (tests/test_prose_numbers.py
holds every chapter to it; the rules are written out in that test's docstring):

1. **printed** — a stored output of the same notebook prints it (same unit family, at the prose's
   precision);
2. **sourced** — its sentence carries its source: a link to a web page, a ``data/…`` file, or a
   source of ``data/sources.csv`` by id;
3. **derived** — it is an operand of a by-hand derivation whose result the next code cell prints;
4. **input** — it is a literal of the next code cell's source (the scenario the cell computes);

and anything that is not a quantity is not looked at (identifiers, versions, chapter and list
numbers, years, code, formula constants, bare counts below 1,000).
"""

from __future__ import annotations

import argparse
import csv
import functools
import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- units

#: unit spelling -> (family, factor to the family's base). Families never mix: GB and GiB, GB/s and
#: GiB/s are different families (a GiB figure never stands for a GB one).
_UNITS: dict[str, tuple[str, float]] = {}
for _p, _f in (("", 1), ("K", 1e3), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15)):
    _UNITS[f"{_p}B"] = ("bytes", _f)
    _UNITS[f"{_p}B/s"] = ("bytes/s", _f)
    _UNITS[f"{_p}FLOPs"] = ("flops", _f)
    _UNITS[f"{_p}FLOP"] = ("flops", _f)
    _UNITS[f"{_p}FLOP/s"] = ("flop/s", _f)
    _UNITS[f"{_p}W"] = ("watts", _f)
for _p, _f in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("Pi", 2**50)):
    _UNITS[f"{_p}B"] = ("bytes (binary)", _f)
    _UNITS[f"{_p}B/s"] = ("bytes/s (binary)", _f)
_UNITS.update({
    "bytes": ("bytes", 1), "byte": ("bytes", 1), "Gbps": ("bits/s", 1e9), "Gbit/s": ("bits/s", 1e9),
    "Tbps": ("bits/s", 1e12), "bits": ("bits", 1), "bit": ("bits", 1),
    "ns": ("s", 1e-9), "µs": ("s", 1e-6), "μs": ("s", 1e-6), "us": ("s", 1e-6), "ms": ("s", 1e-3),
    "s": ("s", 1), "min": ("s", 60), "minutes": ("s", 60), "minute": ("s", 60), "h": ("s", 3600),
    "hours": ("s", 3600), "hour": ("s", 3600), "days": ("s", 86400), "day": ("s", 86400),
    "weeks": ("s", 7 * 86400), "%": ("%", 1), "×": ("ratio", 1), "x": ("ratio", 1),
    "times": ("ratio", 1), "USD": ("USD", 1), "$": ("USD", 1), "GHz": ("Hz", 1e9), "MHz": ("Hz", 1e6),
    "tokens/s": ("tokens/s", 1), "GT/s": ("GT/s", 1),
})
#: one-letter units (s, h, B, W, x) need a space before them ("3.5h", "16B", "8x" are names)
_UNIT_RE = "|".join(("(?<= )" if len(u) == 1 and u.isalpha() else "") + re.escape(u)
                    for u in sorted(_UNITS, key=len, reverse=True) if u != "$")
# a number: 1,234.5 or 1.5e9 or 10^9 / 10⁹ (a power of ten); an optional unit after it
_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"
NUMBER = re.compile(
    r"(?P<dollar>\$(?=\d))?"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\d^" + _SUP + r"])|\d+\^\{?-?\d+\}?|\d+[" + _SUP + r"]+)"
    r"(?:\s?(?P<unit>" + _UNIT_RE + r")(?![A-Za-z0-9])(?<![×x])|(?P<times>[×x])(?![\w($\\])|\s(?P<spaced>×)(?!\s*[\w($\\]))?")


def _value(num: str) -> tuple[float, int]:
    """The number's value and its decimals (the precision it was printed at)."""
    trans = str.maketrans(_SUP, "0123456789-")
    m = re.fullmatch(r"(\d+)\^\{?(-?\d+)\}?", num) or re.fullmatch(r"(\d+)([" + _SUP + r"]+)", num)
    if m:
        return float(m.group(1)) ** int(m.group(2).translate(trans)), 0
    raw = num.replace(",", "")
    mantissa, _, exp = raw.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    if not decimals and not exp and len(raw) >= 3:
        # a round integer in prose (27,000) is written to its significant digits, at least two
        zeros = len(raw) - len(raw.rstrip("0"))
        return float(raw), -min(zeros, len(raw) - 2)
    return float(raw), decimals - (int(exp) if exp else 0)


@dataclass(frozen=True)
class Quantity:
    """A number with its unit (``""`` if none), as it was written."""

    value: float
    decimals: int
    unit: str
    text: str

    def family(self) -> tuple[str, float] | None:
        return _UNITS.get(self.unit) if self.unit else None


_RANGE_END = re.compile(r"\s?(?:[–-]|to)\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s?(?P<unit>" + _UNIT_RE + r")(?![A-Za-z0-9])")


def _quantity(m: re.Match) -> Quantity:
    """The quantity a match reads; the first number of a range takes the range's unit
    ("1–2 µs" is 1 µs and 2 µs; "64 KiB to 8 MiB" keeps each its own)."""
    value, decimals = _value(m.group("num"))
    unit = "$" if m.group("dollar") else (m.group("unit") or m.group("times") or m.group("spaced") or "")
    if not unit and (end := _RANGE_END.match(m.string, m.end())):
        unit = end.group("unit")
    return Quantity(value, decimals, unit, m.group(0))


def matches(prose: Quantity, printed: Quantity) -> bool:
    """Whether ``printed`` is ``prose`` at the prose's precision: the same unit family (scaled
    within it: 1.3 ms is 1,270 µs), a percentage against a printed fraction, a printed number
    without a unit (a table cell) against any unit."""
    tol = 0.5 * 10.0 ** -prose.decimals * 1.001 + 1e-12 * abs(prose.value)
    candidates = [printed.value]
    pf, qf = prose.family(), printed.family()
    if pf and qf:
        if pf[0] != qf[0]:
            return False
        candidates = [printed.value * qf[1] / pf[1]]
    elif pf and pf[0] == "%" and not qf:
        candidates.append(100 * printed.value)
    elif qf and qf[0] == "%" and not pf:
        candidates.append(printed.value / 100)
    return any(abs(c - prose.value) <= tol for c in candidates)


# --------------------------------------------------------------------------- what is not a quantity

#: words after which a number names something (a chapter, a version, a model) rather than measures it
NAMING_WORDS = (
    r"chapters?|Chapter|sections?|Section|exercises?|Exercise|problems?|Problem|Q|questions?|cells?|"
    r"steps? \d+ of|Figure|Table|Part|points?|issues?|PR|Neuron|SDK|releases?|versions?|v|Gen|"
    r"Llama|Llama \d|Llama-?\d|Python|PyTorch|JAX|jax|NKI|Trainium|Inferentia|Mixtral|Qwen|DeepSeek-V|"
    r"DeepSeek|H|A|B|p|trn|inf|MLPerf|NeuronLink-v|NeuronCore-v|EFA-v|PCIe Gen|Gen|ZeRO-?|ZeRO stage|"
    r"stage|NCCL|CUDA|Megatron-LM|transformers|torch|vLLM|nbval|Altair|arXiv|RFC|ISO|IEEE|Rainier|"
    r"Project|Ultra|Theorem|Lemma|Eq\.|equation|§|SQuAD|Gen6|LNC=|TP|PP|DP|EP|SP|CP|tp=|pp=|dp=|ep=|TP=|PP=|DP=|EP=")
_NAMING = re.compile(r"(?:\b(?:" + NAMING_WORDS + r")[\s>-]*|[A-Za-z][\w.-]*[-_.=]|[A-Za-z])$")
YEAR = re.compile(r"(?:19|20)\d\d")
#: definitions of units, not facts: seconds in a day and an hour, bytes in a KiB, GiB per GB
UNIT_CONSTANTS = {86_400.0, 3_600.0, 1_024.0, 1_048_576.0, 1_073_741_824.0, 1.074, 1.0737, 1.07374}


SOURCE = "⟦source⟧"


#: an author-year citation, as the chapters write them: "(Korthikanti et al. 2022, §4.2.3)",
#: "Kwon et al. (2023)", "(DeepSeek-AI 2024, section 3.3)", "(Llama Team 2024)" (a name, then a year
#: closed by a bracket, comma or semicolon); and an arXiv id
_YEAR = r"(?:19[5-9]\d|20[0-2]\d)"
CITATION = re.compile(r"\bet\s+al\.?,?\s+\(?" + _YEAR + r"\b"                     # Kwon et al. (2023)
                      r"|\b[A-Z][\w-]*[a-z][\w-]*(?:\s+Team)?,?\s+\(?" + _YEAR + r"[),;]"  # DeepSeek-AI 2024,
                      r"|arXiv:\d{4}\.\d{4,5}")


@functools.cache
def source_titles() -> tuple[str, ...]:
    """The titles of data/sources.csv (up to the first bracket, colon or semicolon), at least
    12 characters: a sentence naming one ("AWS's page *Compute-Communication Overlap in Neuron*")
    carries that source."""
    with open(ROOT / "data" / "sources.csv", encoding="utf-8") as f:
        titles = {re.split(r" \(|: |; ", row["title"])[0].strip(" *\"") for row in csv.DictReader(f)}
    return tuple(sorted(t for t in titles if len(t) >= 12))


def normalise(markdown: str, ids: set[str]) -> str:
    """The prose of a markdown cell: a source (a link to a web page, a ``data/`` file, a
    ``data/sources.csv`` id) becomes the marker ``⟦source⟧``; code spans, HTML tags, link
    targets and the generated reading-time line go; LaTeX's ``57{,}344`` and ``2.4 \\times 10^{-4}``
    / ``9.4 × 10⁶`` become plain numbers (``57,344``, ``2.4e-4``, ``9.4e6``)."""
    text = re.sub(r"^\*Reading time: about \d+ min \(core path \d+ min\)\.\*$", "", markdown, flags=re.M)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\]\(https?://(?!mybinder)[^)\s]*\)", "] " + SOURCE, text)
    text = re.sub(r"\]\([^)\s]*\)", "]", text)
    text = re.sub(r"`?\bdata/[\w./-]+`?", SOURCE, text)
    text = re.sub(r"`([\w.-]+)`", lambda m: SOURCE if m.group(1) in ids else m.group(0), text)
    text = re.sub(r"\[([\w.-]+)\]", lambda m: SOURCE if m.group(1) in ids else m.group(0), text)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = CITATION.sub(SOURCE, text)
    for title in source_titles():   # named in italics or quotes
        text = re.sub(r"[*_\"“']" + re.escape(title) + r"[*_\"”']", SOURCE, text, flags=re.I)
    text = re.sub(r"<[^>\n]*>", " ", text)
    text = re.sub(r"https?://\S+", " ", text)
    text = re.sub(r"(\d)\{,\}(\d)", r"\1,\2", text)
    text = re.sub(r"\\[,;!]", " ", text)
    sup = str.maketrans(_SUP, "0123456789-")
    text = re.sub(r"(\d(?:\.\d+)?)\s*(?:\\times|×|\\cdot)\s*10\s*(?:\^\{?(-?\d+)\}?|([" + _SUP + r"]+))",
                  lambda m: f"{m.group(1)}e{m.group(2) or m.group(3).translate(sup)}", text)
    return text


def _math_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\$\$.*?\$\$|\$[^$\n]+\$", text, flags=re.S)]


def _in(spans, pos) -> tuple[int, int] | None:
    return next((s for s in spans if s[0] <= pos < s[1]), None)


def not_a_quantity(text: str, m: re.Match, q: Quantity, math_span) -> str | None:
    """Why the number at ``m`` is no quantity, or None. ``text`` is the stripped cell."""
    start, end = m.start("num"), m.end()
    before, after = text[max(0, start - 40):start], text[end:end + 12]
    line_start = text.rfind("\n", 0, start) + 1
    if re.fullmatch(r"\s*(?:[-*>]\s*)*", text[line_start:start]) and re.match(r"[.)]\s", text[m.end("num"):]):
        return "list numbering"
    if text[m.end("num"):m.end("num") + 1].isalpha() and not q.unit:
        return "identifier (405B, 8xlarge, 2D)"
    if _NAMING.search(before) and not q.unit:
        return "a name or version (Neuron 2.32, chapter 05, Llama 3, TP64)"
    if re.search(r"\b(?:chapters?|Chapters?|Q|questions?|exercises?)\s(?:\d\d?(?:,\s|\sand\s|\sor\s|–|-))+$", before):
        return "a list of chapter or question numbers"
    if not q.unit and q.decimals <= 0 and "," not in q.text and YEAR.fullmatch(m.group("num")):
        return "a year"
    if re.match(r"-\d\d(?:-\d\d)?\b", text[m.end("num"):]) or re.search(r"\d{4}-$", before):
        return "a date"
    if re.match(r"[.]\d+[.]\d", text[m.end("num"):]) or re.search(r"\d\.$", before):
        return "a version number (2.32.0)"
    if re.match(r"/\d+\b", text[m.end("num"):]) and not q.unit or re.search(r"\d/$", before) and not q.unit:
        return "a date or fraction label (12/02)"
    if q.unit in ("", "s") and q.value in UNIT_CONSTANTS:
        return "a unit's definition (86,400 s a day, 1,024, 1.074 GiB per GB)"
    if "^" in q.text or any(c in q.text for c in _SUP):
        return "a power written as a power (10^9, 2^30): a unit or a scale, not a measurement"
    if math_span is not None and not q.unit and q.decimals <= 0 and q.value < 1000 and "e" not in m.group("num").lower():
        return "a small integer in a formula (a coefficient, an exponent, a degree)"
    if not q.unit and q.decimals <= 0 and q.value < 1000 and "^" not in q.text and not any(c in q.text for c in _SUP):
        return "a count below 1,000 with no unit of measure"
    return None


# --------------------------------------------------------------------------- sources

def source_ids() -> set[str]:
    with open(ROOT / "data" / "sources.csv", encoding="utf-8") as f:
        return {row["source_id"] for row in csv.DictReader(f)}


def sentences(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of a normalised cell: a sentence ends at '.', '?' or '!' before
    white space and a capital (or a bracket, a quote, ``**``), at a line break before a list item,
    a quote or a heading, at a blank line, and at a table cell's bar."""
    cuts = {0, len(text)}
    for m in re.finditer(r"(?<=[.?!])\s+(?=[A-Z*(\[>\"“])|\n\s*\n|\n(?=\s*(?:[-*>]\s|\d+\.\s|#|\|))|\|", text):
        cuts.add(m.end())
    cuts = sorted(cuts)
    return list(zip(cuts[:-1], cuts[1:]))


# --------------------------------------------------------------------------- derivations

#: units inside a chain: all but the ratio signs, which are operators there
_CHAIN_UNIT_RE = "|".join(("(?<= )" if len(u) == 1 and u.isalpha() else "") + re.escape(u)
                          for u in sorted(_UNITS, key=len, reverse=True) if u not in ("$", "×", "x", "times"))
#: an arithmetic chain: numbers (with units, in bold, in math, in brackets) joined by operators
_ELEM = (r"\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?(?:\^\{?-?\d+\}?|[" + _SUP + r"]+)?"
         r"(?:\s?(?:" + _CHAIN_UNIT_RE + r")(?![A-Za-z]))?")
_JOIN = (r"[\s*$(){}\[\]]*(?:[×x*/÷+−=≈→-]|\\times|\\cdot|\\approx|\\div|\\to|\\frac|\\sqrt|≤|≥|<|>|per)"
         r"[\s*$(){}\[\]\\]*(?:sqrt|frac)?[\s*$(){}\[\]]*")
CHAIN = re.compile(_ELEM + r"(?:" + _JOIN + _ELEM + r")+")


def derivations(text: str) -> list[tuple[int, int, int]]:
    """(start, end, where its results start) of each by-hand derivation in ``text``: a chain of
    numbers joined by operators containing ``=`` or ``≈``. Its results are the numbers after its
    first ``=``/``≈``, and any number after it in the same sentence (the conclusion: "so 2 chips")."""
    out = []
    for m in CHAIN.finditer(text):
        eq = re.search(r"=|≈|\\approx", m.group(0))
        if eq:
            out.append((m.start(), m.end(), m.start() + eq.start()))
    return out


# --------------------------------------------------------------------------- a notebook


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def output_text(cell: dict) -> str:
    """What a code cell's stored outputs print as text (charts' SVG and widgets aside)."""
    parts = []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        parts.append(_text(o.get("text")))
        for mime in ("text/plain", "text/markdown", "text/latex"):
            parts.append(_text(data.get(mime)))
        if "text/html" in data:
            parts.append(html.unescape(re.sub(r"<[^>]+>", " ", _text(data["text/html"]))))
    return "\n".join(p for p in parts if p)


def printed_quantities(text: str) -> list[Quantity]:
    return [_quantity(m) for m in NUMBER.finditer(text)]


@dataclass(frozen=True)
class Finding:
    chapter: str
    cell: int
    quantity: Quantity
    reason: str       # "printed", "sourced", "derived", "input", or "" when unaccounted
    excerpt: str

    @property
    def ok(self) -> bool:
        return bool(self.reason)

    def __str__(self) -> str:
        return f"{self.chapter} cell {self.cell}: {self.quantity.text!r} in {self.excerpt!r}"


def exercise_literals(chapter: str, attr: str) -> list[Quantity]:
    """The numbers an exercise's solution code types (its premises)."""
    import importlib

    try:
        q = getattr(importlib.import_module(f"trainium_lab.exercises.ch{chapter}"), attr)
    except (ImportError, AttributeError):
        return []
    return printed_quantities(re.sub(r"(?<=\d)_(?=\d)", "", q._solution))


def _checking_cell(cells: list[dict], i: int) -> dict | None:
    """The code cell right after markdown cell ``i`` (None if the next cell is not code)."""
    return cells[i + 1] if i + 1 < len(cells) and cells[i + 1]["cell_type"] == "code" else None


def _inputs(cells: list[dict], i: int, chapter: str) -> list[Quantity]:
    """Literals of the code cell right before, of the next two code cells and, if one of them checks an exercise
    (``chNN.qK.check(``), of that exercise's solution."""
    out = []
    for cell in ([cells[i - 1]] if i else []) + cells[i + 1:i + 3]:
        if cell["cell_type"] != "code":
            continue
        src = re.sub(r"(?<=\d)_(?=\d)", "", _text(cell["source"]))
        out += printed_quantities(src)
        for ch, attr in re.findall(r"\bch(\d\d)\.(q\w+)\.check\(", src):
            out += exercise_literals(ch, attr)
    return out


def _decimals_in(prose: Quantity, literal: Quantity) -> int:
    """The literal's precision in the prose's unit (a literal 0.35 is 35 % to 0 decimals): the
    prose may not round a literal it claims to repeat."""
    return literal.decimals - (2 if prose.unit == "%" and not literal.unit else 0)


def _count_printed(count: str, printed: str) -> bool:
    """Whether a count conclusion ("17 chips", "232 tokens") is printed: its number, at its
    precision, followed by its noun (up to two words between: "**17** Trainium2 chips")."""
    number, noun = count.split()[0].strip("*"), count.split()[-1]
    want = _value(number)[0]
    pat = r"(?<![\d.,])(\d[\d,]*(?:\.\d+)?)\**\s+(?:[\w*-]+\s+){0,2}\**" + re.escape(noun)
    return any(abs(float(m.group(1).replace(",", "")) - want) <= 0.5 for m in re.finditer(pat, printed))


def check_notebook(nb: dict, chapter: str, ids: set[str] | None = None) -> list[Finding]:
    """Every quantity in the notebook's markdown, with the rule that accounts for it ("" if none)."""
    ids = source_ids() if ids is None else ids
    cells = nb["cells"]
    printed = [q for c in cells if c["cell_type"] == "code" for q in printed_quantities(output_text(c))]
    out = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        raw = _text(cell["source"])
        if raw.lstrip().startswith("[←") or "mybinder.org" in raw.split("\n")[0]:
            continue   # the generated navigation line
        text = normalise(raw, ids)
        spans = _math_spans(text)
        sents = sentences(text)
        nxt = _checking_cell(cells, i)
        nxt_printed = printed_quantities(output_text(nxt)) if nxt else []
        inputs = _inputs(cells, i, chapter)
        checked = []   # derivations whose result the next code cell prints
        for a, b, r in derivations(text):
            s1 = next((e for s, e in sents if s <= a < e), len(text))
            results = [_quantity(m) for m in NUMBER.finditer(text, r, s1)
                       if not_a_quantity(text, m, _quantity(m), _in(spans, m.start())) is None]
            counts = [m.group(0) for m in re.finditer(r"(?:\d{1,3}(?:,\d{3})+|\d+)\**\s+[a-z]\w+", text[r:s1])]
            nxt_out = output_text(nxt) if nxt else ""
            if any(matches(q, p) for q in results for p in nxt_printed) or any(
                    _count_printed(c, nxt_out) for c in counts):
                checked.append((a, b))
        for m in NUMBER.finditer(text):
            q = _quantity(m)
            if q.unit == "$" and _in(spans, m.start()):   # a math delimiter, not a dollar
                q = Quantity(q.value, q.decimals, "", q.text[1:])
            if not_a_quantity(text, m, q, _in(spans, m.start())) is not None:
                continue
            s0, s1 = next(((a, b) for a, b in sents if a <= m.start() < b), (0, len(text)))
            excerpt = text[max(s0, m.start() - 60):min(s1, m.end() + 40)].replace("\n", " ").strip()
            if any(matches(q, p) for p in printed):
                reason = "printed"
            elif SOURCE in text[s0:s1]:
                reason = "sourced"
            elif any(a <= m.start() < b for a, b in checked):
                reason = "derived"
            elif any(matches(q, lit) and q.decimals >= _decimals_in(q, lit) for lit in inputs):
                reason = "input"
            else:
                reason = ""
            out.append(Finding(chapter, i, q, reason, excerpt))
    return out


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chapters", nargs="*")
    ap.add_argument("--all", action="store_true", help="show accounted numbers too")
    args = ap.parse_args(argv)
    ids, bad = source_ids(), 0
    for path in notebooks():
        if args.chapters and path.stem[:2] not in args.chapters:
            continue
        found = check_notebook(json.loads(path.read_text(encoding="utf-8")), path.stem[:2], ids)
        missing = [f for f in found if not f.ok]
        bad += len(missing)
        counts = {}
        for f in found:
            counts[f.reason.split(":")[0] or "UNACCOUNTED"] = counts.get(f.reason.split(":")[0] or "UNACCOUNTED", 0) + 1
        print(f"== {path.stem}: {counts}")
        for f in found if args.all else missing:
            print(f"  [{f.reason or 'UNACCOUNTED'}] {f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
