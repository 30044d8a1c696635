"""One meaning per name and no reference a reader cannot follow (issue 13): unit conversions go
through trainium_lab.units, rates are named as rates, and no docstring or comment points at
internal documents."""

import re
from pathlib import Path

import pytest

import trainium_lab
from trainium_lab import cores, layouts, roofline, serving, sizing

ROOT = Path(trainium_lab.__file__).parent
NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "__main__", "jaxdemo",
              "units"}


def package_files():
    return sorted(ROOT.rglob("*.py"))


def model_files():
    """Model modules, and the modules of a model package (``layouts/``)."""
    return [p for p in sorted(ROOT.glob("*.py")) + sorted(ROOT.glob("*/*.py"))
            if p.stem not in NOT_MODELS and p.parent.name not in NOT_MODELS | {"data"}]


def test_no_reference_to_internal_documents():
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in package_files()
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"background doc", line, re.I)]
    assert offenders == []


LITERAL_CONVERSION = re.compile(r"/\s*(3600|86400|60)(\.0*)?\b|/\s*2\s*\*\*\s*(20|30|40)\b|/\s*1024\s*\*\*")


@pytest.mark.parametrize("path", model_files(), ids=lambda p: str(p.relative_to(ROOT).with_suffix("")))
def test_models_convert_with_units_constants(path):
    """``t / hour``, not ``t / 3600.0``; ``b / GiB``, not ``b / 2**30`` (STYLE.md: units)."""
    offenders = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#")[0]
        if ">>>" in line:
            continue
        if LITERAL_CONVERSION.search(code):
            offenders.append(f"{path.name}:{i}: {line.strip()}")
    assert offenders == []


def test_rates_are_named_as_rates():
    """Columns holding TFLOP/s are ``..._tflop_per_s``; the old ``tflops`` names survive only as
    aliases with the same values, for the charts written before issue 13."""
    frames = {
        "roofline_curve": roofline.roofline_curve("trn2"),
        "batch_curve": roofline.batch_curve(8192, 8192),
        "compute_bound_batch_table": roofline.compute_bound_batch_table(["trn2"]),
        "ridge_table": roofline.ridge_table(["trn2"]),
        "generations_table": cores.generations_table(),
        "roofline_points": serving.roofline_points(serving.replica("llama3-8b", tp=4), batches=[1],
                                                   prompts=[128]),
        "chip_decode_table": serving.chip_decode_table("llama3-8b", 1, 1, 1024),
    }
    for name, df in frames.items():
        rate_cols = [c for c in df.columns if "tflop_per_s" in c]
        assert rate_cols, name
        for c in df.columns:
            if c.endswith("tflops"):
                assert df[c].equals(df[c.replace("tflops", "tflop_per_s")]), (name, c)
                assert list(df.columns).index(c) > list(df.columns).index(
                    c.replace("tflops", "tflop_per_s")), (name, c)   # aliases come last


def test_plan_means_one_thing():
    """'plan' is the layout planner's result; chapter 04's sizing result is a job sizing
    (``sizing.JobSizing``; ``SizingPlan`` is kept as an alias for old callers)."""
    assert sizing.JobSizing is sizing.SizingPlan
    assert type(sizing.size_job(8e9, 1e12)).__name__ == "JobSizing"
    assert layouts.Plan.__name__ == "Plan"


# --------------------------------------------------------------------------- one home per concept

def _grep(pattern, allowed):
    rx = re.compile(pattern)
    hits = []
    for p in sorted(ROOT.rglob("*.py")):
        if p.stem in allowed:
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if rx.search(line.split("#")[0]) and ">>>" not in line:
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    return hits


def test_one_table_of_number_formats():
    """No module but dtypes maps dtype spellings (the issue found three vocabularies)."""
    assert _grep(r"""["'](bf16|fp16|fp8|e4m3|float8_e4m3fn)["']\s*:\s*["'a-z(]""", {"dtypes"}) == []


def test_one_lnc_rule():
    """Only cores resolves LNC from a chip's options and default (topology had its own)."""
    assert _grep(r"(?<!cores)\.lnc_(options|default)\b", {"cores", "specs"}) == []


def test_cores_split_keeps_every_public_path():
    from trainium_lab import claim_checks, generations

    for name in ("generations_table", "disagreements", "neuroncore_table", "neuroncore_blocks"):
        assert getattr(cores, name) is getattr(generations, name)
    for name in claim_checks.__all__:
        assert getattr(cores, name) is getattr(claim_checks, name)
    assert set(cores.__all__) >= set(generations.__all__) | set(claim_checks.__all__)
