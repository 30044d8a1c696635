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


# --------------------------------------------------------------------------- parsing (issue 13:
# the command line's parsers live here, one home for reading quantities with units)

@pytest.mark.parametrize("text, expected", [
    ("1GiB", u.GiB), ("2.5 GB", 2.5 * u.GB), ("4096", 4096.0), ("512 MiB", 512 * u.MiB),
    (".5TB", 0.5 * u.TB), ("3 bytes", 3.0), (4096, 4096.0),
])
def test_parse_bytes(text, expected):
    assert u.parse_bytes(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("25GB/s", 25 * u.GB), ("400Gbps", 400 * u.Gbps), ("1.5 TiB/s", 1.5 * u.TiB),
    ("1 Tbps", 1000 * u.Gbps), ("100 Mbps", 0.1 * u.Gbps),
])
def test_parse_rate(text, expected):
    assert u.parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("90s", 90.0), ("24h", u.day), ("1.5 min", 90.0), ("10us", 10 * u.us), ("3d", 3 * u.day),
    ("250 ms", 0.25), ("2 hours", 2 * u.hour),
])
def test_parse_seconds(text, expected):
    assert u.parse_seconds(text) == pytest.approx(expected)


def test_parse_count_and_fraction():
    assert u.parse_count("70B") == 70e9 and u.parse_count("2T") == 2e12
    assert u.parse_count("1.5M") == 1.5e6 and u.parse_count("8e9") == 8e9
    assert u.parse_fraction("40%") == pytest.approx(0.4) and u.parse_fraction("0.35") == 0.35
    assert u.parse_usd_per_hour("$21.50") == 21.5 and u.parse_usd_per_hour("40 USD/h") == 40


@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False))
def test_parsing_inverts_the_constants(x):
    assert u.parse_bytes(f"{x!r} GiB") == pytest.approx(x * u.GiB)
    assert u.parse_seconds(f"{x!r}h") == pytest.approx(x * u.hour)
    assert u.parse_rate(f"{x!r}Gbps") == pytest.approx(x * u.Gbps)


@pytest.mark.parametrize("parse, text", [
    (u.parse_bytes, "1 GHz"), (u.parse_bytes, "GiB"), (u.parse_rate, "25GB"),
    (u.parse_seconds, "90"), (u.parse_seconds, 90), (u.parse_seconds, "1 fortnight"),
    (u.parse_count, "70Q"), (u.parse_fraction, "40 percent"), (u.parse_bytes, "inf GiB"),
    (u.parse_bytes, "1e400 B"), (u.parse_bytes, "1e29 TB"), (u.parse_bytes, None),
    (u.parse_bytes, [1, 2]), (u.parse_count, True), (u.parse_bytes, float("nan")),
    (u.parse_usd_per_hour, "40 EUR"), (u.parse_usd_per_hour, None),
])
def test_parsing_rejects_with_the_name(parse, text):
    with pytest.raises(ValueError, match="--size"):
        parse(text, "--size")


def test_cli_uses_the_units_parsers():
    from trainium_lab import cli

    assert cli.parse_bytes is u.parse_bytes and cli.parse_seconds is u.parse_seconds


# --------------------------------------------------------------------------- issue 42: one parser,
# case is the meaning (B a byte, b a bit), the ambiguous refused with the reason

#: (spelling, bytes/s per unit of the number) — every way the grid writes each unit
RATE_GRID = [
    *[(f"{p}{u}", k) for p, k in (("k", u.KB), ("K", u.KB), ("M", u.MB), ("G", u.GB), ("T", u.TB),
                                   ("P", u.PB))
      for u in ("B/s", "Bps", "BPS", "B/sec", "Byte/s", "bytes/s")],
    *[(f"{p}{u}", k / 8) for p, k in (("K", u.KB), ("M", u.MB), ("G", u.GB), ("T", u.TB))
      for u in ("b/s", "bps", "bit/s", "bits/s")],
    *[(f"{p}{u}", k) for p, k in (("Ki", u.KiB), ("Mi", u.MiB), ("Gi", u.GiB), ("Ti", u.TiB))
      for u in ("B/s", "Bps")],
    ("Gibit/s", u.GiB / 8), ("B/s", 1.0), ("bytes/s", 1.0), ("bit/s", 1 / 8),
]
AMBIGUOUS_RATES = ["gbps", "gb/s", "tbps", "mbps", "kbps", "kb/s", "gib/s", "bps"]


@pytest.mark.parametrize("spaced", ["", " "], ids=["25GB/s", "25 GB/s"])
@pytest.mark.parametrize("unit, size", RATE_GRID, ids=[g[0] for g in RATE_GRID])
def test_rate_grid_reads_every_spelling_case_sensitively(unit, size, spaced):
    assert u.parse_rate(f"25{spaced}{unit}", "--bandwidth") == pytest.approx(25 * size, rel=1e-12)


@pytest.mark.parametrize("unit", AMBIGUOUS_RATES)
def test_rate_grid_refuses_the_ambiguous_and_says_why(unit):
    with pytest.raises(ValueError, match=r"--bandwidth: .*reads two ways") as err:
        u.parse_rate(f"25 {unit}", "--bandwidth")
    assert "byte" in str(err.value) and "bit" in str(err.value)


def test_the_audited_misreadings_are_gone():
    # issue 42: 25GBps was read as 3.125 GB/s, 10TBps as 1.25 TB/s, 25 Gb/s as 25 GB/s, 1Gb as 1 GB
    assert u.parse_rate("25GBps") == 25 * u.GB
    assert u.parse_rate("10TBps") == 10 * u.TB
    assert u.parse_rate("25 Gb/s") == 25 * u.GB / 8
    assert u.parse_bytes("1Gb") == u.GB / 8
    assert u.parse_rate("400Gbps") == u.parse_rate("50GB/s") == u.parse_rate("400 Gbit/s")


@pytest.mark.parametrize("text, expected", [
    ("1GB", u.GB), ("1 GB", u.GB), ("1kB", u.KB), ("1KB", u.KB), ("1GiB", u.GiB), ("1 TiB", u.TiB),
    ("8Gb", u.GB), ("8 Gbit", u.GB), ("8 bits", 1.0), ("3 bytes", 3.0), ("1,024 MiB", u.GiB),
    ("2 GByte", 2 * u.GB),
])
def test_size_grid(text, expected):
    assert u.parse_bytes(text, "--size") == pytest.approx(expected)


@pytest.mark.parametrize("text, why", [
    ("1 gb", "reads two ways"), ("1 mb", "reads two ways"), ("1 gib", "reads two ways"),
    ("1 mB", "milli"), ("1 GB/s", "is a rate"), ("25 GB", None), ("25", "plain number"),
])
def test_size_and_rate_refusals_say_why(text, why):
    parse = u.parse_rate if text in ("25 GB", "25") else u.parse_bytes
    with pytest.raises(ValueError, match="--flag") as err:
        parse(text, "--flag")
    assert why is None or why in str(err.value)
    if text == "25 GB":
        assert "a size" in str(err.value) and "/s" in str(err.value)


def test_fields_read_the_same_grid():
    for unit, size in RATE_GRID:
        assert u.parse_in_unit(f"2 {unit}", "GB/s", "rate", size=u.GB, name="ckpt GB/s")[0] == \
            pytest.approx(2 * size / u.GB, rel=1e-12)
    for unit in AMBIGUOUS_RATES:
        with pytest.raises(ValueError, match="ckpt GB/s: .*reads two ways"):
            u.parse_in_unit(f"2 {unit}", "GB/s", "rate", size=u.GB, name="ckpt GB/s")


def test_too_large_is_said_in_the_fields_unit_not_base_units():
    with pytest.raises(ValueError) as err:
        u.parse_in_unit("1e40", "GiB", "bytes", size=u.GiB, name="FSx (GiB)")
    assert "base units" not in str(err.value) and "GiB" in str(err.value)
    with pytest.raises(ValueError) as err:
        u.parse_in_unit("1e30", name="chips")
    assert str(err.value) == "chips: '1e30' is too large; this field takes values below 1e+30"
