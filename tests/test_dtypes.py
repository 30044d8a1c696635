"""One vocabulary of number formats (issue 13): every module accepts the same dtype names,
reads sizes and labels from one table, and defaults to the same spelling."""

import importlib
import inspect
import pkgutil

import ml_dtypes
import numpy as np
import pytest

import trainium_lab
from trainium_lab import dtypes, kernels, numerics, roofline, serving, sizing, specs

FORMAT_NAMES = list(dtypes.NUMBER_FORMATS)


def spellings(name):
    names = dtypes.accepted_names([name])
    return sorted(set(names) | {n.upper() for n in names} | {f" {names[-1]} "})


def test_canonical_names_are_the_ml_dtypes_names():
    for name, fmt in dtypes.NUMBER_FORMATS.items():
        if hasattr(ml_dtypes, name) or hasattr(np, name):
            assert np.dtype(dtypes._np_type(name)).name == name
        assert fmt.element_type in ("float32", "bfloat16", "float16", "float8_e4m3fn",
                                    "float8_e5m2", "float8_e3m4", "float4_e2m1fn")
    assert dtypes.DEFAULT == "bfloat16"


def test_every_spelling_reaches_one_format():
    for name in FORMAT_NAMES:
        for s in spellings(name):
            assert dtypes.canonical(s) == name, s
    # numpy dtypes and scalar types too
    assert dtypes.canonical(np.float32) == "float32"
    assert dtypes.canonical(np.dtype(ml_dtypes.bfloat16)) == "bfloat16"
    assert dtypes.canonical(ml_dtypes.float8_e5m2) == "float8_e5m2"


def test_no_spelling_is_ambiguous():
    seen = {}
    for fmt in dtypes.NUMBER_FORMATS.values():
        for a in (fmt.name.lower(),) + fmt.aliases:
            assert a not in seen, f"{a!r} names both {seen[a]} and {fmt.name}"
            seen[a] = fmt.name


def test_bytes_per_element_from_the_element_type():
    """OCP MX v1.0: one 8-bit E8M0 scale per 32 elements; TF32 operands are stored as FP32."""
    expected = {"float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3fn": 1,
                "float8_e5m2": 1, "float8_e3m4": 1, "mxfp8_e4m3": 1 + 1 / 32,
                "mxfp8_e5m2": 1 + 1 / 32, "float4_e2m1fn": 0.5, "mxfp4": 0.5 + 1 / 32}
    assert {n: dtypes.bytes_per_element(n) for n in FORMAT_NAMES} == pytest.approx(expected)


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_every_module_accepts_the_same_names(name):
    """The issue's mismatch: numerics accepted "e4m3" and rejected "fp8", roofline the reverse.
    Now each module takes every spelling of every format it supports, with one answer."""
    fmt = dtypes.NUMBER_FORMATS[name]
    for s in spellings(name):
        assert roofline.bytes_per_element(s) == fmt.bytes_per_element, s
        assert serving.kv_cache_bytes_per_token(32, 8, 128, roofline.bytes_per_element(s)) > 0
        table = specs.chip("trn3").dense_flops_per_s
        if fmt.rate_key in table:
            assert table[s] == table[fmt.rate_key], s
            assert sizing.system_flops_per_s("trn3-gen1-ultraserver", s) == \
                sizing.system_flops_per_s("trn3-gen1-ultraserver", fmt.rate_key)
        if name in numerics.FORMATS:
            assert numerics.format_info(s).name == name, s
            assert kernels.matmul_hbm_bytes(256, 512, 256, 128, 512, dtype=s) == \
                kernels.matmul_hbm_bytes(256, 512, 256, 128, 512, dtype=name)
            assert serving.model_kv_bytes_per_token("llama3-8b", s) == \
                serving.model_kv_bytes_per_token("llama3-8b", name)


def test_the_issues_examples():
    assert numerics.format_info("fp8").name == "float8_e4m3fn"      # numerics rejected it
    assert roofline.bytes_per_element("e4m3") == 1.0                # roofline rejected it
    assert specs.chip("trn2").dense_flops_per_s["E4M3"] == specs.chip("trn2").dense_flops_per_s["fp8"]


def test_specs_aliases_are_derived_from_the_one_table():
    assert set(specs.DTYPE_ALIASES) == set(dtypes.ALIASES)
    assert all(specs.DTYPE_ALIASES[a] == dtypes.rate_key(a) for a in dtypes.ALIASES)
    assert numerics.LABELS == {n: dtypes.label(n) for n in numerics.LABELS}
    assert set(numerics.FORMATS) <= set(numerics.LABELS)
    # chapter 02's MX tables are the block-scaled rows of the same table
    assert numerics.MX_FORMATS == {n: f.element_type for n, f in dtypes.NUMBER_FORMATS.items()
                                   if f.block_size}
    assert numerics.MX_LABELS == {n: dtypes.label(n) for n in numerics.MX_FORMATS}


@pytest.mark.parametrize("call", [
    lambda: dtypes.canonical("fp7"), lambda: roofline.bytes_per_element("fp7"),
    lambda: numerics.format_info("fp7"), lambda: dtypes.canonical(None),
    lambda: dtypes.canonical(3.0), lambda: dtypes.canonical(float),
])
def test_unknown_names_raise_value_error_naming_dtype(call):
    with pytest.raises(ValueError, match="dtype must be one of"):
        call()


def test_formats_a_module_cannot_cast_are_refused_with_its_list():
    with pytest.raises(ValueError, match="dtype must be one of 'bfloat16'.*got 'mxfp8'"):
        numerics.format_info("mxfp8")
    with pytest.raises(ValueError, match="kv_dtype must be one of"):
        serving.model_kv_bytes_per_token("llama3-8b", "fp7")


def _model_modules():
    skip = {"charts", "widgets", "exercises", "notebook", "cli", "views", "__main__", "jaxdemo"}
    for info in pkgutil.iter_modules(trainium_lab.__path__):
        if not info.name.startswith("_") and info.name not in skip:
            module = importlib.import_module(f"trainium_lab.{info.name}")
            yield module
            if info.ispkg:   # a model package (layouts): its modules define the functions
                for sub in pkgutil.iter_modules(module.__path__):
                    yield importlib.import_module(f"{module.__name__}.{sub.name}")


def test_dtype_defaults_are_canonical_names():
    """Defaults agree: every string default of a ``*dtype`` parameter is a canonical name, and the
    matmul / weight / activation defaults are all ``dtypes.DEFAULT`` (the issue found "bf16" in
    one module and "bfloat16" in another)."""
    found = 0
    for module in _model_modules():
        for _, obj in inspect.getmembers(module, inspect.isfunction):
            if obj.__module__ != module.__name__:
                continue
            for p in inspect.signature(obj).parameters.values():
                if p.name.endswith("dtype") and isinstance(p.default, str):
                    found += 1
                    where = f"{module.__name__}.{obj.__name__}({p.name}={p.default!r})"
                    assert dtypes.canonical(p.default) == p.default, where
                    if p.name in ("dtype", "weight_dtype", "kv_dtype", "compute_dtype") and \
                            not obj.__name__.startswith("fp8"):
                        assert p.default == dtypes.DEFAULT, where
    assert found > 20
