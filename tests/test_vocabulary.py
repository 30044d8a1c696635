"""One meaning per name and no reference a reader cannot follow (issue 13): unit conversions go
through trainium_lab.units, rates are named as rates, and no docstring or comment points at
internal documents."""

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest

import trainium_lab
from trainium_lab import cores, kernels, layouts, roofline, serving, sizing

ROOT = Path(trainium_lab.__file__).parent
NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "diagrams", "__main__", "jaxdemo",
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
    """Columns holding TFLOP/s are ``..._tflop_per_s`` (FLOPs is a count, FLOP/s a rate)."""
    frames = {
        "roofline_curve": roofline.roofline_curve("trn2"),
        "batch_curve": roofline.batch_curve(8192, 8192),
        "compute_bound_batch_table": roofline.compute_bound_batch_table(["trn2"]),
        "ridge_table": roofline.ridge_table(["trn2"]),
        "core_roofline": kernels.core_roofline("trn2"),
        "generations_table": cores.generations_table(),
        "roofline_points": serving.roofline_points(serving.replica("llama3-8b", tp=4), batches=[1],
                                                   prompts=[128]),
        "chip_decode_table": serving.chip_decode_table("llama3-8b", 1, 1, 1024),
    }
    for name, df in frames.items():
        assert [c for c in df.columns if "tflop_per_s" in c], name
        assert _tflops_columns(df) == [], name


_TFLOPS = re.compile(r"tflops", re.I)


def _tflops_columns(result) -> list[str]:
    """Columns named like ``tflops`` (a count's name on a rate) in a result: a DataFrame, or the
    DataFrames a dataclass, tuple or list holds."""
    if isinstance(result, pd.DataFrame):
        return [str(c) for c in result.columns if _TFLOPS.search(str(c))]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        parts = [getattr(result, f.name) for f in dataclasses.fields(result)]
    elif isinstance(result, (tuple, list)):
        parts = list(result)
    else:
        return []
    return [c for part in parts for c in _tflops_columns(part)]


def test_the_tflops_check_can_fail():
    bad = pd.DataFrame({"tflop_per_s": [1.0], "bf16_TFLOPS": [1.0]})
    assert _tflops_columns(bad) == ["bf16_TFLOPS"]
    assert _tflops_columns((1, [bad])) == ["bf16_TFLOPS"]
    assert _tflops_columns(serving.replica("llama3-8b", tp=4)) == []


def test_no_model_result_has_a_tflops_column():
    """Every public function of every model module, called with the fuzz test's valid baseline:
    no DataFrame it returns (directly or in a result dataclass) names a rate ``tflops``."""
    from test_fuzz import FUNCTIONS, baseline   # the walk over the model modules and its baselines

    offenders = {}
    for qualname, fn in FUNCTIONS:
        cols = _tflops_columns(fn(**baseline(qualname, fn)))
        if cols:
            offenders[qualname] = cols
    assert len(FUNCTIONS) > 100 and offenders == {}


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
    # issue 26: the claim checks have one home (claim_checks, which imports cores); cores no longer
    # re-exports them, which made the package's one import circle. generations stays re-exported.
    from trainium_lab import claim_checks, generations

    for name in ("generations_table", "disagreements", "neuroncore_table"):
        assert getattr(cores, name) is getattr(generations, name)
    for name in claim_checks.__all__:
        assert not hasattr(cores, name), name
    assert set(cores.__all__) >= set(generations.__all__)
    assert not set(cores.__all__) & set(claim_checks.__all__)
