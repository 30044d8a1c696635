"""Units are identities (hepunits style) and the formatters print what learners read."""

import math

import pytest
from hypothesis import given, strategies as st

from trainium_lab import units as u


def test_decimal_and_binary_prefixes():
    assert u.KB == 1e3 and u.MB == 1e6 and u.GB == 1e9 and u.TB == 1e12
    assert u.KiB == 1024 and u.MiB == 1024**2 and u.GiB == 1024**3 and u.TiB == 1024**4
    assert u.GiB / u.GB == pytest.approx(1.073741824)


def test_time_units():
    assert u.ms == 1e-3 and u.us == 1e-6 and u.ns == 1e-9
    assert u.hour == 3600 and u.day == 24 * u.hour and u.minute == 60


def test_rates():
    assert u.Gbps * 8 == pytest.approx(1e9)
    assert 200 * u.Gbps == pytest.approx(25 * u.GB)  # 200 Gbps EFA per chip = 25 GB/s


@pytest.mark.parametrize("value, expected", [
    (96 * u.GiB, "96.0 GiB"), (1536 * u.GiB, "1.5 TiB"), (512.0, "512 B"), (3 * u.MiB, "3.0 MiB"),
])
def test_format_bytes(value, expected):
    assert u.format_bytes(value) == expected


def test_format_bytes_decimal():
    assert u.format_bytes(96 * u.GiB, binary=False) == "103.1 GB"


@pytest.mark.parametrize("seconds, expected", [
    (0.00024576, "246 µs"), (0.000786432, "786 µs"), (0.0100663, "10.1 ms"), (0.50625, "506 ms"),
    (3942.0, "65.7 min"), (130 * u.day, "130 days"), (0.0, "0 s"), (5.0, "5.00 s"),
])
def test_format_seconds(seconds, expected):
    assert u.format_seconds(seconds) == expected


def test_format_rates_and_counts():
    assert u.format_flop_rate(667e12) == "667 TFLOP/s"
    assert u.format_flop_rate(10.7e15) == "10.7 PFLOP/s"
    assert u.format_flops(3.8e25) == "3.80e+25 FLOPs"
    assert u.format_bandwidth(25e9) == "25.0 GB/s"


@given(st.floats(min_value=1, max_value=1e30, exclude_max=True))  # _validate.MAX_MAGNITUDE
def test_format_bytes_roundtrips_to_one_decimal(x):
    text = u.format_bytes(x)
    number, unit = text.split()
    factor = {"B": 1, "KiB": u.KiB, "MiB": u.MiB, "GiB": u.GiB, "TiB": u.TiB}[unit]
    assert math.isclose(float(number) * factor, x, rel_tol=0.06, abs_tol=1.0)


@pytest.mark.parametrize("func", [u.format_bytes, u.format_seconds, u.format_flops,
                                  u.format_flop_rate, u.format_bandwidth])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "12", None, True])
def test_formatters_reject_bad_input(func, bad):
    with pytest.raises(ValueError, match="must be"):
        func(bad)
