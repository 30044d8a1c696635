"""Chapter 00's model and first widget."""

import math

import pytest
from hypothesis import given, strategies as st

from trainium_lab import intro, specs
from trainium_lab.units import GB, GiB
from trainium_lab.widgets.base import BENCHMARKS
from trainium_lab.widgets.start import weights_explorer


def test_weights_bytes():
    assert intro.weights_bytes(8e9, 2) == 16 * GB


def test_weights_vs_hbm_70b_bf16():
    df = intro.weights_vs_hbm(70e9, 2, "trn2")
    assert df.gib[0] == pytest.approx(140e9 / GiB)
    assert df.gib[1] == specs.chip("trn2").hbm_bytes / GiB
    assert df.attrs["chips_needed"] == math.ceil(140e9 / specs.chip("trn2").hbm_bytes)


@given(st.floats(min_value=1e6, max_value=1e13), st.sampled_from([1.0, 2.0, 4.0]))
def test_chips_needed_is_monotone_and_sufficient(n_params, bpp):
    df = intro.weights_vs_hbm(n_params, bpp, "trn2")
    n = df.attrs["chips_needed"]
    assert n * specs.chip("trn2").hbm_bytes >= n_params * bpp
    assert (n - 1) * specs.chip("trn2").hbm_bytes < n_params * bpp
    bigger = intro.weights_vs_hbm(n_params * 2, bpp, "trn2").attrs["chips_needed"]
    assert bigger >= n


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
    assert ex.chart.spec != first and ex.result.attrs["chips_needed"] == 2
    assert "70" not in ex.error.value and ex.last_error is None
    ex.controls["n_params_billion"].value = -5.0
    assert ex.last_error is not None and "n_params" in ex.error.value
    assert ex.result.attrs["chips_needed"] == 2  # last good result kept
    ex.controls["n_params_billion"].value = 8.0
    assert ex.error.value == "" and ex.last_error is None
    ex.controls["chip"].value = "trn3"
    assert "Trainium3" in ex.result.item[1]


def test_widget_is_registered_for_the_benchmark():
    assert "start.weights_explorer" in BENCHMARKS
