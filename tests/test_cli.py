"""``python -m trainium_lab``: the calculators from a terminal, driven as a subprocess.

Published worked numbers come from /work/shared/reference/published_cases.md (the background
documents' worked examples, checked in the claims audit) unless another source is named.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainium_lab import cli, collectives, planning, reliability, sizing, specs
from trainium_lab.units import GB, GiB, day, hour, minute, ms

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="error")
    return subprocess.run([sys.executable, "-m", "trainium_lab", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)


def run_json(*args: str) -> dict:
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- help

@pytest.mark.parametrize("command", ["", "sizing", "allreduce", "young", "specs"])
def test_help_is_clear(command):
    proc = run(*([command] if command else []), "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    assert "Example" in proc.stdout
    if command == "":
        for sub in ("sizing", "allreduce", "young", "specs"):
            assert sub in proc.stdout
    if command == "allreduce":
        assert "25GB/s" in proc.stdout and "1GiB" in proc.stdout


def test_no_command_prints_help_and_fails():
    proc = run()
    assert proc.returncode == 2
    assert "sizing" in proc.stdout


# --------------------------------------------------------------------------- published numbers

def test_sizing_70b_on_2t_tokens():
    # published_cases.md, "Sizing 70B on 2T tokens, trn2": 1,043 GiB state, >= 17 chips
    # (so two instances), 2,278 instance-days (16 B/param, 35 % for activations, MFU 40 %)
    out = run_json("sizing", "--params", "70B", "--tokens", "2T", "--system", "trn2.48xlarge",
                   "--mfu", "40%")
    r = out["results"]
    assert out["command"] == "sizing"
    assert round(r["state_bytes"] / GiB) == 1043
    assert r["min_chips"] == 17 and r["min_systems"] == 2
    assert r["instance_days"] == pytest.approx(2278, abs=0.5)
    assert r["days"] == pytest.approx(r["instance_days"] / 2)
    plan = sizing.size_job(70e9, 2e12, system="trn2.48xlarge", mfu=0.4)
    assert r["flops"] == plan.flops == 6 * 70e9 * 2e12


def test_sizing_8b_on_1t_tokens_on_16_instances():
    # published_cases.md, "Sizing 8B on 1T tokens, trn2": 119 GiB state, >= 2 chips,
    # 4.8e22 FLOPs, 130 instance-days (about 8 days on 16 instances)
    r = run_json("sizing", "--params", "8e9", "--tokens", "1T", "--mfu", "0.4",
                 "--instances", "16")["results"]
    assert round(r["state_bytes"] / GiB) == 119
    assert r["min_chips"] == 2
    assert r["flops"] == pytest.approx(4.8e22, rel=0.01)
    assert round(r["instance_days"]) == 130
    assert r["n_instances"] == 16 and r["days"] == pytest.approx(8.1, abs=0.05)


def test_sizing_from_a_model_preset():
    # published_cases.md: 6ND for Llama 3 405B on 15.6T tokens is 3.8e25 FLOPs (Meta 2024,
    # arXiv:2407.21783)
    r = run_json("sizing", "--model", "llama3-405b", "--tokens", "15.6T")["results"]
    assert r["flops"] == pytest.approx(3.8e25, rel=0.005)
    assert r["activation_bytes_per_chip"] > 0


def test_sizing_grad_bytes_flag_switches_the_convention():
    """NVIDIA/Megatron-LM theoretical_memory_usage.py and DeepSpeed's memory docs count FP32
    gradients, 18 B/param for mixed-precision Adam; the course counts BF16 gradients, 16."""
    help_text = run("sizing", "--help").stdout
    flat = " ".join(help_text.split())
    assert "--grad-bytes" in flat and "Default 2" in flat and "BF16" in flat and "18 bytes/param" in flat
    course = run_json("sizing", "--params", "70B", "--tokens", "2T")
    peers = run_json("sizing", "--params", "70B", "--tokens", "2T", "--grad-bytes", "4")
    assert course["inputs"]["grad_bytes_per_param"] == 2 and peers["inputs"]["grad_bytes_per_param"] == 4
    assert peers["results"]["state_bytes"] == pytest.approx(18 * 70e9)
    assert course["results"]["state_bytes"] == pytest.approx(16 * 70e9)
    assert peers["results"]["min_chips"] == sizing.size_job(70e9, 2e12, grad_bytes_per_param=4).min_chips
    assert "4-byte gradients, 18 bytes/param" in run("sizing", "--params", "70B", "--tokens", "2T",
                                                      "--grad-bytes", "4").stdout


def test_sizing_table_shows_units():
    proc = run("sizing", "--params", "70B", "--tokens", "2T", "--mfu", "40%")   # published_cases.md: at MFU 40 %
    assert proc.returncode == 0 and proc.stderr == ""
    for text in ("1.02 TiB", "GiB", "FLOPs", "instance-days", "2,277.5", "17"):
        assert text in proc.stdout


def test_allreduce_tp_block_in_a_16_chip_torus():
    # published_cases.md, "Ring all-reduce, TP block in a 16-chip torus":
    # S = 2·4096·16384 B, n = 16, B = 1,024 GB/s -> 0.24576 ms
    r = run_json("allreduce", "--size", str(2 * 4096 * 16384), "--ranks", "16",
                 "--bandwidth", "1024GB/s")["results"]
    assert r["time_s"] == pytest.approx(0.24576 * ms, rel=1e-9)
    # the same block over EFA, 25 GB/s: 10.0663 ms
    r = run_json("allreduce", "--size", "128MiB", "--ranks", "16", "--bandwidth", "25GB/s")
    assert r["results"]["time_s"] == pytest.approx(10.0663 * ms, rel=1e-5)


def test_allreduce_bus_bandwidth_is_the_link_bandwidth():
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw · 2(n−1)/n, which for a latency-free ring
    # all-reduce equals the per-rank link bandwidth
    r = run_json("allreduce", "--size", "1GiB", "--ranks", "16", "--bandwidth", "25GB/s")
    assert r["inputs"]["size_bytes"] == GiB and r["inputs"]["bandwidth_bytes_per_s"] == 25 * GB
    res = r["results"]
    assert res["time_s"] == pytest.approx(2 * 15 / 16 * GiB / (25 * GB))
    assert res["busbw_bytes_per_s"] == pytest.approx(25 * GB)
    assert res["algbw_bytes_per_s"] == pytest.approx(GiB / res["time_s"])


def test_allreduce_with_latency_and_from_a_sourced_link():
    r = run_json("allreduce", "--size", "1MB", "--ranks", "8", "--bandwidth", "400Gbps",
                 "--latency", "10us")["results"]
    assert r["time_s"] == pytest.approx(collectives.ring_allreduce_s(1e6, 8, 50e9, 10e-6))
    link = specs.link("trn2-neuronlink-intra")
    out = run_json("allreduce", "--size", "128MiB", "--ranks", "16", "--link", link.key)
    assert out["inputs"]["bandwidth_bytes_per_s"] == link.bytes_per_s
    proc = run("allreduce", "--size", "128MiB", "--ranks", "16", "--link", link.key)
    assert link.key in proc.stdout and "246 µs" in proc.stdout  # 0.24576 ms, as above


def test_young_interval_90s_24h():
    # published_cases.md, "Young's interval": checkpoint 90 s, MTBF 24 h -> 65.7 min
    r = run_json("young", "--checkpoint", "90s", "--mtbf", "24h")["results"]
    assert round(r["young_interval_s"] / minute, 1) == 65.7
    assert r["daly_interval_s"] == reliability.daly_interval_s(90, 24 * hour)
    assert r["optimal_interval_s"] <= r["young_interval_s"]
    assert r["lost_fraction"]["optimal"] <= r["lost_fraction"]["young"]
    proc = run("young", "--checkpoint", "90s", "--mtbf", "24h")
    assert "65.7 min" in proc.stdout


def test_daly_figure_3_case():
    # Daly 2006, Future Generation Computer Systems 22(3), Fig. 3: δ = 5 min, M = 24 h -> 117 min
    r = run_json("young", "--checkpoint", "5min", "--mtbf", "1d")["results"]
    assert r["daly_interval_s"] / minute == pytest.approx(117, abs=0.5)


def test_young_with_a_per_unit_mtbf():
    r = run_json("young", "--checkpoint", "2min", "--mtbf", "1000d",
                 "--units", "4096")["results"]
    assert r["job_mtbf_s"] == pytest.approx(1000 * day / 4096)


def test_specs_lookup_with_sources():
    out = run_json("specs", "trn2")
    facts = {f["field"]: f for f in out["facts"]}
    used = specs.fact("trn2", "hbm_bytes")
    # issue 42: --json is in base units everywhere (as written beside it)
    assert facts["hbm_bytes"]["value"] == used.base_value and facts["hbm_bytes"]["unit"] == "bytes"
    assert facts["hbm_bytes"]["as_written"] == f"{used.value} {used.unit}"
    assert all(f["source"] for f in out["facts"])
    assert {f["status"] for f in out["facts"]} == {"used"}
    both = run_json("specs", "trn2", "--field", "hbm_bytes_per_s", "--all")["facts"]
    assert len(both) == 1 + len(specs.alternatives("trn2", "hbm_bytes_per_s"))
    listing = run_json("specs")["entities"]
    assert "trn2.48xlarge" in listing["systems"] and "trn2" in listing["chips"]
    proc = run("specs", "trn2.48xlarge")
    assert proc.returncode == 0 and "AWS" in proc.stdout


# --------------------------------------------------------------------------- bad input

BAD = [
    ("sizing", "--params", "-5B", "--tokens", "2T"),
    ("sizing", "--params", "70X", "--tokens", "2T"),
    ("sizing", "--tokens", "2T"),
    ("sizing", "--params", "70B"),
    ("sizing", "--params", "70B", "--tokens", "2T", "--system", "trn9"),
    ("sizing", "--params", "70B", "--tokens", "2T", "--mfu", "140%"),
    ("sizing", "--params", "70B", "--tokens", "2T", "--zero", "7"),
    ("sizing", "--params", "70B", "--tokens", "2T", "--grad-bytes", "-4"),
    ("sizing", "--params", "70B", "--tokens", "2T", "--grad-bytes", "4", "--bytes-per-param", "16"),
    ("sizing", "--model", "gpt-9", "--tokens", "2T"),
    ("allreduce", "--size", "1GiB", "--ranks", "0", "--bandwidth", "25GB/s"),
    ("allreduce", "--size", "1GiB", "--ranks", "2.5", "--bandwidth", "25GB/s"),
    ("allreduce", "--size", "1GiB", "--ranks", "4", "--bandwidth", "25"),
    ("allreduce", "--size", "1 parsec", "--ranks", "4", "--bandwidth", "25GB/s"),
    ("allreduce", "--size", "nan", "--ranks", "4", "--bandwidth", "25GB/s"),
    ("allreduce", "--size", "1GiB", "--ranks", "4"),
    ("allreduce", "--size", "1GiB", "--ranks", "4", "--link", "warp-drive"),
    ("allreduce", "--size", "1GiB", "--ranks", "4", "--bandwidth", "1GB/s", "--collective", "gossip"),
    ("young", "--checkpoint", "90", "--mtbf", "24h"),
    ("young", "--checkpoint", "90s", "--mtbf", "-1h"),
    ("young", "--checkpoint", "0s", "--mtbf", "24h"),
    ("young", "--checkpoint", "90s", "--mtbf", "24h", "--units", "0"),
    ("specs", "trn9"),
    ("specs", "trn2", "--field", "warp_factor"),
    ("frobnicate",),
    ("sizing", "--params", "70B", "--tokens", "2T", "--bogus-flag"),
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a))
def test_bad_input_exits_nonzero_with_one_line(args):
    proc = run(*args)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""


def test_bad_input_names_the_parameter():
    assert "--params" in run("sizing", "--params", "-5B", "--tokens", "2T").stderr  # the flag (issue 25)
    assert "--bandwidth" in run("allreduce", "--size", "1GiB", "--ranks", "4",
                                "--bandwidth", "25").stderr
    assert "trn2.48xlarge" in run("sizing", "--params", "70B", "--tokens", "2T",
                                  "--system", "trn9").stderr  # lists the known systems


@given(st.lists(st.text(max_size=12), max_size=6))
def test_no_input_makes_a_traceback(capsys_args):
    """Whatever is typed, main() returns a status and never raises (in-process, fast)."""
    for command in ("sizing", "allreduce", "young", "specs"):
        argv = [command, *capsys_args]
        try:
            status = cli.main(argv)
        except SystemExit as exc:  # --help among the random words
            status = exc.code
        assert status in (0, 1, 2)
        assert status != 1, f"internal error for {argv}"


# --------------------------------------------------------------------------- unit parsing

@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False))
def test_units_round_trip(x):
    assert cli.parse_bytes(f"{x!r}GiB") == pytest.approx(x * GiB)
    assert cli.parse_bytes(f"{x!r} GB") == pytest.approx(x * GB)
    assert cli.parse_rate(f"{x!r}GB/s") == pytest.approx(x * GB)
    assert cli.parse_rate(f"{x!r}Gbps") == pytest.approx(x * GB / 8)
    assert cli.parse_seconds(f"{x!r}h") == pytest.approx(x * hour)
    assert cli.parse_seconds(f"{x!r}ms") == pytest.approx(x * ms)
    assert cli.parse_count(f"{x!r}B") == pytest.approx(x * 1e9)
    assert cli.parse_fraction(f"{x!r}%") == pytest.approx(x / 100)


@pytest.mark.parametrize("parse,text", [
    (cli.parse_bytes, "1 GHz"), (cli.parse_bytes, "GiB"), (cli.parse_rate, "25GB"),
    (cli.parse_seconds, "90"), (cli.parse_seconds, "1 fortnight"), (cli.parse_count, "70Q"),
    (cli.parse_fraction, "40 percent"), (cli.parse_bytes, "inf GiB"),
])
def test_unit_parsing_rejects(parse, text):
    # the parsers moved to trainium_lab.units (issue 13): they raise ValueError naming what
    # was being read, as every function of the package does; the CLI prints it on one line
    with pytest.raises(ValueError, match="--what"):
        parse(text, "--what")


def test_json_values_are_base_units():
    r = run_json("young", "--checkpoint", "1.5min", "--mtbf", "1d", "--restart", "10min")
    assert r["inputs"] == {"checkpoint_s": 90.0, "mtbf_s": 86400.0, "n_units": None,
                           "restart_s": 600.0}
    assert math.isclose(r["results"]["young_interval_s"], math.sqrt(2 * 90 * 86400))


# --------------------------------------------------------------------------- issue 25


def main_out(capsys, *args: str) -> tuple[int, str, str]:
    """The CLI's main in-process (no interpreter start): exit status, stdout, stderr."""
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_sizing_counts_the_active_parameters_of_a_mixture_of_experts(capsys):
    # Qwen3 Technical Report (arXiv:2505.09388): 235B in total, 22B activated per token
    code, out, err = main_out(capsys, "sizing", "--model", "qwen3-235b-a22b", "--tokens", "1T", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    m = sizing.preset("qwen3-235b-a22b")
    assert d["results"]["flops"] == pytest.approx(6 * m.n_active_params * 1e12)
    assert d["inputs"]["n_active_params"] == m.n_active_params
    assert d["results"]["state_bytes"] == pytest.approx(16 * m.n_params)   # memory keeps the total
    # Mixtral 8x7B (Mistral AI: 46.7B total, 12.9B per token), and an explicit count
    code, out, _ = main_out(capsys, "sizing", "--model", "mixtral-8x7b", "--tokens", "1T", "--json")
    assert json.loads(out)["results"]["flops"] == pytest.approx(6 * 12.9e9 * 1e12)
    code, out, _ = main_out(capsys, "sizing", "--params", "100B", "--active-params", "10B", "--tokens", "1T",
                            "--json")
    assert json.loads(out)["results"]["flops"] == pytest.approx(6e22)


def test_plan_gives_the_default_405b_plan_of_plan_run(capsys):
    # issue 39: the CLI's plan is plan_run's; TP stays inside one trn2.48xlarge, so 2,048 instances (the most the
    # 2,048-sequence batch splits over) miss 90 days, and the plan names the UltraServer plan that would meet it
    code, out, _ = main_out(capsys, "plan", "--model", "llama3-405b", "--tokens", "15T", "--deadline", "90d",
                            "--price", "40", "--json")
    assert code == 0
    data = json.loads(out)
    p = planning.plan_run("llama3-405b", 15e12, deadline_s=90 * day, usd_per_hour=40.0)
    assert (data["inputs"]["n_systems"], data["layout"]["label"]) == (p.n_systems, p.layout.label())
    assert data["layout"]["levels"]["tp"] != "efa" and data["deadline"]["verdict"] == p.deadline_verdict == "missed"
    alt = data["deadline"]["alternative"]
    assert (alt["system"], alt["n_systems"], alt["layout"]) == (p.deadline_alternative.system,
                                                                p.deadline_alternative.n_systems,
                                                                p.deadline_alternative.layout.label())
    assert data["deadline"]["text"] == p.deadline_text


def test_compare_and_plan_default_to_the_calibrated_mfu_and_the_published_batch(capsys):
    # issue 24: the planner's and sizing's defaults come from the calibration (data/calibration.csv,
    # planner_mfu, fitted on AWS's Trn1 training table), the CLI's included; issue 25: the default global batch
    # is the published one (Dubey et al. 2024, Table 4: 2,048 sequences once Llama 3 405B passes 2.87T tokens)
    code, out, _ = main_out(capsys, "compare", "--model", "llama3-8b", "--tokens", "1T", "--json")
    assert code == 0
    mfu = json.loads(out)["inputs"]["mfu"]
    assert set(mfu.values()) == {sizing.default_mfu()}
    code, out, _ = main_out(capsys, "compare", "--model", "llama3-8b", "--tokens", "1T", "--mfu", "40%", "--json")
    assert set(json.loads(out)["inputs"]["mfu"].values()) == {0.4}
    code, out, _ = main_out(capsys, "plan", "--model", "llama3-405b", "--tokens", "15T", "--system",
                            "trn2-ultraserver", "--deadline", "90d", "--price", "40", "--json")
    assert code == 0
    data = json.loads(out)
    text = json.dumps(data)
    assert "2048" in text and "sourced: phase 3" in text
