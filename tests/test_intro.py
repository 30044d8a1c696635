"""Chapter 00's model and first widget."""

import math

import pytest
from hypothesis import given, strategies as st

from trainium_lab import intro, sizing, specs
from trainium_lab.units import GB, GiB
from trainium_lab.widgets.base import BENCHMARKS
from trainium_lab.widgets.start import stored_options, weights_explorer


def test_weights_bytes():
    assert intro.weights_bytes(8e9, 2) == 16 * GB


def test_weights_vs_hbm_70b_bf16():
    df = intro.weights_vs_hbm(70e9, 2, "trn2")
    assert df.gib[0] == pytest.approx(140e9 / GiB)
    assert df.gib[1] == specs.chip("trn2").hbm_bytes / GiB
    assert df.kind.tolist() == ["needed", "available"] and df.attrs == {}
    # the chip count is hbm_fit's, with nothing kept free: the weights alone
    fit = intro.hbm_fit(70e9, "bfloat16", "trn2", reserve_share=0.0)
    assert fit.min_chips == math.ceil(140e9 / specs.chip("trn2").hbm_bytes) == 2
    assert fit.total_bytes / GiB == pytest.approx(df.gib[0])


@given(st.floats(min_value=1e6, max_value=1e13), st.sampled_from(["float32", "bfloat16",
                                                                   "float8_e4m3fn"]))
def test_chips_needed_is_monotone_and_sufficient(n_params, stored):
    hbm = specs.chip("trn2").hbm_bytes
    fit = intro.hbm_fit(n_params, stored, "trn2", reserve_share=0.0)
    n = fit.min_chips
    assert n * hbm >= fit.total_bytes * (1 - 1e-12)
    assert (n - 1) * hbm < fit.total_bytes
    assert intro.hbm_fit(n_params * 2, stored, "trn2", reserve_share=0.0).min_chips >= n


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_params=-1), "n_params"), (dict(n_params=0), "n_params"),
    (dict(n_params=float("nan")), "n_params"), (dict(n_params="8e9"), "n_params"),
    (dict(n_params=1e9, bytes_per_param=0), "bytes_per_param"),
    (dict(n_params=1e9, chip="h100"), "chip"),
])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        intro.weights_vs_hbm(**kwargs)


@given(st.one_of(st.floats(max_value=0), st.just(float("nan")), st.just(float("inf"))))
def test_bad_sizes_rejected(x):
    with pytest.raises(ValueError, match="n_params"):
        intro.weights_bytes(x)


def test_gb_and_gib():
    df = intro.gb_and_gib(96 * GiB)
    assert df.value.tolist() == pytest.approx([96 * GiB / GB, 96.0])
    with pytest.raises(ValueError, match="n_bytes"):
        intro.gb_and_gib(-1)


def test_widget_updates_chart_and_shows_errors_inline():
    ex = weights_explorer(8.0)
    first = ex.chart.spec
    ex.controls["n_params_billion"].value = 70.0
    assert ex.chart.spec != first and ex.result.min_chips == 3   # 130.4 GiB over 62.4 GiB
    assert ex.last_error is None and not ex.result.fits
    ex.controls["n_chips"].value = 3
    assert ex.result.fits and "<b>3</b>" in ex.summary.value
    ex.controls["n_params_billion"].value = -5.0
    assert ex.last_error == "params (B) must be > 0; got -5" and "params (B)" in ex.error.value
    assert ex.result.n_params == 70e9  # last good result kept
    ex.controls["n_params_billion"].value = 8.0
    assert ex.error.value == "" and ex.last_error is None
    ex.controls["chip"].value = "trn3"
    assert ex.result.chip == "Trainium3"
    ex.controls["stored"].value = "bf16-adam"
    assert ex.result.bytes_per_param == 16
    assert "FP32 master copy" in str(ex.chart.spec)


def test_widget_menu_offers_serving_formats_and_training_recipes():
    options = dict((v, label) for label, v in stored_options())
    assert "bf16-adam" in options and "bfloat16" in options
    assert "16 B/param" in options["bf16-adam"] and "2 B/param" in options["bfloat16"]


def test_widget_is_registered_for_the_benchmark():
    assert "start.weights_explorer" in BENCHMARKS
    factory, changes = BENCHMARKS["start.weights_explorer"]
    w = factory()
    for control, value in changes:
        before = w.updates
        w.controls[control].value = value
        assert w.last_error is None and w.updates == before + 1, (control, value)


# --------------------------------------------------------------------------- what must fit in HBM

def test_hbm_fit_70b_worked_problem():
    # chapter 00: 70e9 × 2 bytes = 140 GB = 130.4 GiB; 96 GiB per Trainium2 (AWS Neuron docs)
    f = intro.hbm_fit(70e9, "bfloat16", "trn2", reserve_share=0.0)
    assert f.total_bytes == 140 * GB and f.total_bytes / GiB == pytest.approx(130.385, abs=1e-3)
    assert f.min_chips == 2 and not f.fits
    assert intro.hbm_fit(70e9, "bfloat16", "trn2", n_chips=2, reserve_share=0.0).fits


def test_hbm_fit_training_state_matches_sizing():
    """16 bytes per parameter for BF16 mixed precision with Adam (Rajbhandari et al. 2020, ZeRO,
    section 3.1); the 70B case needs 17 Trainium2 chips with 35 % kept free, as chapter 04's
    ``sizing.min_chips_for_state`` finds (published_cases.md: sizing rule of thumb)."""
    f = intro.hbm_fit(70e9, "bf16-adam", "trn2")
    assert f.bytes_per_param == 16 and f.total_bytes == sizing.training_state_bytes(70e9)
    assert f.min_chips == sizing.min_chips_for_state(f.total_bytes, "trn2") == 17
    assert f.room_bytes == sizing.usable_state_bytes_per_chip("trn2")
    # the published case: 8B, 16 B/param, 35 % kept free -> 119 GiB of state, >= 2 chips
    g = intro.hbm_fit(8e9, "bf16-adam", "trn2")
    assert round(g.total_bytes / GiB) == 119 and g.min_chips == 2


@given(st.floats(min_value=1e6, max_value=1e13), st.sampled_from(["float32", "bfloat16", "bf16-adam"]),
       st.sampled_from(["trn1", "trn2", "trn3"]), st.floats(min_value=0.0, max_value=0.9))
def test_min_chips_is_the_fewest_that_fit(n_params, stored, chip, share):
    f = intro.hbm_fit(n_params, stored, chip, reserve_share=share)
    assert intro.hbm_fit(n_params, stored, chip, f.min_chips, share).fits
    if f.min_chips > 1:
        assert not intro.hbm_fit(n_params, stored, chip, f.min_chips - 1, share).fits
    assert intro.max_params(stored, chip, f.min_chips, share) >= n_params * (1 - 1e-9)
    parts = f.parts()
    assert parts.loc[parts.bar == "HBM", "bytes"].sum() == pytest.approx(f.hbm_bytes)
    assert parts.loc[parts.bar == "per chip", "bytes"].sum() == pytest.approx(f.bytes_per_chip)


def test_max_params_rules_of_thumb():
    hbm = specs.chip("trn2").hbm_bytes
    assert intro.max_params("bfloat16", "trn2", reserve_share=0.0) == pytest.approx(hbm / 2)
    assert intro.max_params("float8_e4m3fn", "trn2", reserve_share=0.0) == pytest.approx(hbm)
    assert intro.max_params("bf16-adam", "trn2", 4, 0.35) == pytest.approx(4 * hbm * 0.65 / 16)
    assert "fits" in intro.hbm_fit(8e9)._repr_markdown_()


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_params=0), "n_params"), (dict(n_params="8e9"), "n_params"),
    (dict(n_params=8e9, stored="int3"), "stored"), (dict(n_params=8e9, stored=None), "stored"),
    (dict(n_params=8e9, chip="h100"), "chip"), (dict(n_params=8e9, n_chips=0), "n_chips"),
    (dict(n_params=8e9, n_chips=2.5), "n_chips"), (dict(n_params=8e9, reserve_share=1.0), "reserve_share"),
    (dict(n_params=8e9, reserve_share=float("nan")), "reserve_share"),
])
def test_hbm_fit_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        intro.hbm_fit(**kwargs)
