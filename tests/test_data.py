"""Integrity of data/: every value has a unit and a source, one `used` row per fact,
every column documented, and no hardware number typed into the package's modules."""

import ast
import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from trainium_lab import specs

DATA = Path(str(specs.DATA_DIR))
FACT_FILES = ["chips.csv", "cores.csv", "systems.csv", "links.csv", "accelerators.csv"]
FACT_COLUMNS = ["entity", "field", "value", "unit", "status", "source_id", "note"]
ROOT = Path(__file__).resolve().parent.parent


def rows(name):
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def source_ids():
    return {r["source_id"] for r in rows("sources.csv")}


@pytest.mark.parametrize("name", FACT_FILES)
def test_fact_files_layout(name):
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == FACT_COLUMNS


@pytest.mark.parametrize("name", FACT_FILES)
def test_every_value_has_unit_status_and_known_source(name):
    known = source_ids()
    for r in rows(name):
        where = f"{name}: {r['entity']}/{r['field']}"
        assert r["unit"] in specs.UNIT_FACTORS or r["unit"] in specs.TEXT_UNITS, where
        assert r["status"] in {"used", "alternative"}, where
        assert r["source_id"] in known, where
        if r["unit"] not in specs.TEXT_UNITS and r["value"] != "":
            float(r["value"])  # numeric values parse


@pytest.mark.parametrize("name", FACT_FILES)
def test_exactly_one_used_row_per_fact(name):
    used = Counter((r["entity"], r["field"]) for r in rows(name) if r["status"] == "used")
    assert [k for k, n in used.items() if n > 1] == []
    for r in rows(name):
        if r["status"] == "alternative":
            assert (r["entity"], r["field"]) in used, f"alternative without a used value: {r}"


def test_sources_have_title_reference_tier():
    for r in rows("sources.csv"):
        assert r["title"] and r["reference"] and r["tier"] in {"A", "A-", "B", "C"}, r


def test_every_source_is_used():
    cited = set()
    for path in DATA.glob("*.csv"):
        if path.name != "sources.csv":
            for r in rows(path.name):
                cited.add(r["source_id"])
                cited |= {i for i in r.get("evidence_source_id", "").split(";") if i}
    assert source_ids() - cited == set()


def test_claim_evidence_sources_are_known():
    known = source_ids()
    for r in rows("claims.csv"):
        ids = {i for i in r["evidence_source_id"].split(";") if i}
        assert ids <= known, r["claim_id"]
        assert bool(ids) == (r["check"] == "source") == bool(r["evidence"]), r["claim_id"]


def test_other_tables_have_known_sources():
    known = source_ids()
    for path in DATA.glob("*.csv"):
        if path.name in FACT_FILES or path.name == "sources.csv":
            continue
        table = rows(path.name)
        assert table and "source_id" in table[0], path.name
        assert {r["source_id"] for r in table} <= known, path.name


def test_readme_documents_every_column():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for path in DATA.glob("*.csv"):
        assert path.name in readme or path.name in FACT_FILES + ["sources.csv"], path.name
        with open(path, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh))
        for column in header:
            assert f"`{column}`" in readme, f"data/README.md does not document {path.name}:{column}"


# Numbers that are hardware figures in data/ and must not appear typed into package code.
SUSPECT = re.compile(r"(?<![\w.])(667|1299|1,299|2563|96 \* GiB|2\.9e12|1024e9|256e9|25e9|"
                     r"200 \* Gbps|6144|1536)(?![\w.])")


def _docstring_lines(source: str) -> set[int]:
    """Line numbers inside docstrings (their examples may print a figure)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def test_no_hardware_figures_typed_into_modules():
    offenders = []
    for path in (ROOT / "trainium_lab").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        skip = _docstring_lines(source)
        for i, line in enumerate(source.splitlines(), 1):
            code = line.split("#", 1)[0]
            if i not in skip and SUSPECT.search(code):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert offenders == []
