"""A fuzz of the command line (issue 25): every option of every sub-command, one at a time, with bad
values — negative, zero, NaN, infinite, huge, a wrong unit, an unknown name, empty — must give exit 0
(with or without a warning) or 2 (one line naming the problem), never 1 and never a traceback.

The CLI's ``main`` runs in-process (no interpreter start per case), so the whole fuzz takes seconds.
"""

from __future__ import annotations

import argparse
import re

import pytest

from trainium_lab import cli

BAD_VALUES = ("-1", "0", "nan", "inf", "1e308", "5 parsecs", "bogus-name", "")

# a cheap valid command per sub-command; the fuzzed option replaces its own value or is added
BASE = {
    "sizing": ["--model", "llama3-8b", "--tokens", "10B"],
    "allreduce": ["--size", "1GiB", "--ranks", "16", "--bandwidth", "25GB/s"],
    "young": ["--checkpoint", "90s", "--mtbf", "24h"],
    "specs": ["trn2"],
    "plan": ["--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40"],
    "compare": ["--model", "llama3-8b", "--tokens", "10B"],
}
# options that only make sense together with another, or instead of one in BASE
DROP = {("plan", "--deadline"): "--systems", ("plan", "--max-systems"): "--systems",
        ("plan", "--price-per-chip"): "--price", ("allreduce", "--link"): "--bandwidth",
        ("sizing", "--params"): "--model"}
NEEDS = {("plan", "--snapshot"): ["--checkpoint-mode", "async"],
         ("plan", "--kv-heads"): ["--layers", "4", "--d-model", "512", "--heads", "8"],
         ("plan", "--experts"): ["--layers", "4", "--d-model", "512", "--heads", "8", "--experts-per-token", "2",
                                 "--expert-ffn", "1024"]}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _cases():
    for name, sub in _subcommands().items():
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0 or "--help" in action.option_strings:
                continue
            yield name, action.option_strings[-1]


CASES = list(_cases())


def _command(name: str, flag: str, value: str) -> list[str]:
    base = list(BASE[name])
    drop = DROP.get((name, flag))
    if flag in base or drop in base:
        for f in (flag, drop):
            if f in base:
                i = base.index(f)
                del base[i:i + 2]
    return [name, *base, *NEEDS.get((name, flag), []), flag, value]


def test_every_option_of_every_subcommand_is_fuzzed():
    names = {n for n, _ in CASES}
    assert names == set(BASE), names   # a new sub-command needs a baseline here
    assert len(CASES) > 60
    for name in BASE:                  # the baselines themselves run
        assert cli.main([name, *BASE[name]]) == 0


@pytest.mark.parametrize("name, flag", CASES, ids=[f"{n} {f}" for n, f in CASES])
def test_bad_values_exit_0_or_2_with_one_line_and_never_a_traceback(name, flag, capsys):
    for value in BAD_VALUES:
        argv = _command(name, flag, value)
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code in (0, 2), (argv, code, err)
        assert "Traceback" not in err and "internal error" not in err, (argv, err)
        if code == 2:
            lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
            assert len(lines) == 1, (argv, err)


def test_errors_name_the_flag_not_the_python_parameter(capsys):
    for argv, flag in [
        (["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "0"], "--price"),
        (["plan", "--model", "llama3-8b", "--tokens", "10B", "--deadline", "1ns", "--price", "40"], "--deadline"),
        (["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40", "--dtype", "int4"],
         "--dtype"),
        (["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40", "--chip-mtbf", "1s"],
         "--chip-mtbf"),
        (["young", "--checkpoint", "90s", "--mtbf", "24h", "--units", "16384"], "--checkpoint"),
    ]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {flag}"), err
        for name in ("usd_per_hour", "deadline_s", "chip_mtbf_s", "n_systems"):
            assert name not in err, err


def test_version_help_presets_and_required(capsys):
    assert cli.main(["--version"]) == 0
    assert "trainium_lab" in capsys.readouterr().out
    assert cli.main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    from trainium_lab import sizing
    for p in sizing.presets("all"):
        assert p.key in out                        # every preset, not only the Llama models
    usage = out.split("\n\n")[0]
    assert "--model MODEL" in usage and "[--model" not in usage   # shown as required
    assert "16 chips" in out and "4" in out        # --price states its unit
    assert cli.main(["plan", "--tokens", "1T"]) == 2
    assert "--model" in capsys.readouterr().err


def test_implausible_inputs_warn(capsys):
    code = cli.main(["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40",
                     "--chip-mtbf", "1min"])
    assert code == 0 and capsys.readouterr().err.startswith("warning: the plan loses")


# --------------------------------------------------------------------------- issue 42: the unit grid at
# the terminal: --bandwidth and --size read every spelling as the widgets do, case-sensitively

def test_unit_grid_at_the_terminal(capsys):
    import json

    from test_units import AMBIGUOUS_RATES, RATE_GRID

    for unit, size in RATE_GRID:
        for spaced in ("", " "):
            argv = ["allreduce", "--size", "1GiB", "--ranks", "16", "--bandwidth", f"25{spaced}{unit}", "--json"]
            assert cli.main(argv) == 0, argv
            out = json.loads(capsys.readouterr().out)
            assert out["inputs"]["bandwidth_bytes_per_s"] == pytest.approx(25 * size, rel=1e-12), unit
    for unit in AMBIGUOUS_RATES:
        assert cli.main(["allreduce", "--size", "1GiB", "--ranks", "16", "--bandwidth", f"25{unit}"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --bandwidth: ") and "reads two ways" in err, err
    for text, expected in (("1Gb", 1e9 / 8), ("1GB", 1e9), ("1GiB", 2**30)):
        assert cli.main(["allreduce", "--size", text, "--ranks", "16", "--bandwidth", "25GB/s", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["inputs"]["size_bytes"] == expected


# --------------------------------------------------------------------------- issue 42: every message names
# the flag the user touched, in the user's words; no internal parameter name, no base-unit echo

#: a snake_case word in a message is a Python name the user never typed (the program's own name aside)
_INTERNAL = re.compile(r"(?<![\w.'-])[a-z]+(?:_[a-z0-9]+)+(?![\w'-])")


def _internal_names(line: str, flag: str) -> list[str]:
    allowed = {"trainium_lab", "all_reduce", "reduce_scatter", "all_gather", "all_to_all"}
    if flag == "--field":   # the names --field takes are the ones it lists
        return []
    return [w for w in _INTERNAL.findall(line) if w not in allowed]


def test_the_fuzz_names_the_fuzzed_flag_and_no_internal_parameter(capsys):
    rejected, wrong = 0, []
    for name, flag in CASES:
        for value in BAD_VALUES:
            argv = _command(name, flag, value)
            if cli.main(argv) != 2:
                capsys.readouterr()
                continue
            line = capsys.readouterr().err.splitlines()[0]
            rejected += 1
            if flag not in line or _internal_names(line, flag):
                wrong.append((argv, line))
    assert rejected >= 100, rejected
    assert wrong == [], wrong[:5]


#: the audit's bad inputs (users-in-the-browser.md, section 4) that blamed the wrong flag, used an
#: internal name or were silently ignored: (argv, the flag the message must lead with, text it must hold)
AUDITED = [
    (["allreduce", "--size", "1GiB", "--ranks", "16", "--link", "trn9-link"], "--link", "trn2-efa"),
    (["young", "--checkpoint", "90s", "--mtbf", "0h"], "--mtbf", "'0h'"),
    (["young", "--checkpoint", "90s", "--mtbf", "-24h"], "--mtbf", "'-24h'"),
    (["specs", "trn9"], "specs NAME", "trn2.48xlarge"),
    (["specs", "trn2", "--field", "hbm"], "--field", "hbm_bytes"),
    (["specs", "trn2", "--field", ""], "--field", "hbm_bytes"),
    (["plan", "--model", "mymodel", "--tokens", "10B", "--systems", "1", "--price", "40"], "--model", "--layers"),
    (["plan", "--model", "mine", "--layers", "4", "--d-model", "512", "--heads", "33", "--tokens", "10B",
      "--systems", "1", "--price", "40"], "--heads", "--d-model"),
    (["compare", "--model", "llama3-8b", "--tokens", "10B", "--platform-mfu", "p5.48xlarge=135%"],
     "--platform-mfu", "p5.48xlarge=135%"),
    (["compare", "--model", "llama3-8b", "--tokens", "10B", "--reference", "trn2-ultraserver"], "--reference",
     "--price-per-chip"),
    (["sizing", "--params", "1e18", "--tokens", "1e29"], "--tokens", "--params"),
    (["plan", "--model", "llama3-8b", "--tokens", "1e29", "--systems", "1", "--price", "40"], "--tokens",
     "--systems"),
    (["plan", "--model", "llama3-405b", "--tokens", "1e29", "--systems", "6250", "--price", "40"], "--systems",
     "--global-batch"),
    (["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40", "--snapshot", "5s"],
     "--snapshot", "--checkpoint-mode async"),
    (["allreduce", "--size", "1GiB", "--ranks", "16", "--bandwidth", "25GB/s", "--latency", "-10us"],
     "--latency", "'-10us'"),
    (["allreduce", "--size", "-1GiB", "--ranks", "16", "--bandwidth", "25GB/s"], "--size", "'-1GiB'"),
    (["plan", "--model", "llama3-8b", "--tokens", "10B", "--systems", "1", "--price", "40", "--lnc", "3"],
     "--lnc", "leave the flag out"),
    (["allreduce", "--size", "1GiB", "--ranks", "16", "--bandwidth", "25gbps"], "--bandwidth", "two ways"),
]


@pytest.mark.parametrize("argv, flag, text", AUDITED, ids=[" ".join(a[:1] + a[-2:]) for a, _, _ in AUDITED])
def test_audited_messages_blame_the_flag_the_user_touched(argv, flag, text, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}"), err
    assert text in err, err
    assert not _internal_names(err, flag), err
    assert "None" not in err and "e-06" not in err and "1073741824" not in err, err


def _examples(text: str) -> list[list[str]]:
    import shlex

    out = []
    text = text[text.index("Example"):]   # the epilog: examples printed as written
    for line in text.splitlines():
        for part in line.split(" ; "):
            if cli.PROG in part:
                out.append(shlex.split(part[part.index(cli.PROG) + len(cli.PROG):]))
    return out


def test_every_help_example_runs_as_printed(capsys):
    helps = [""] + list(BASE)
    examples = []
    for sub in helps:
        assert cli.main([sub, "--help"] if sub else ["--help"]) == 0
        examples += _examples(capsys.readouterr().out)
    assert len(examples) >= 10, examples
    for argv in examples:
        assert "%%" not in " ".join(argv), argv
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 0, (argv, err)


def test_json_is_in_base_units_everywhere_specs_too(capsys):
    import json

    assert cli.main(["specs", "trn2", "--json"]) == 0
    facts = {f["field"]: f for f in json.loads(capsys.readouterr().out)["facts"]}
    hbm = facts["hbm_bytes"]
    assert hbm["unit"] == "bytes" and hbm["value"] == 96 * 2**30 and hbm["as_written"] == "96 GiB"
    assert facts["hbm_bytes_per_s"]["unit"] == "bytes/s" and isinstance(facts["hbm_bytes_per_s"]["value"], float)
    assert cli.main(["--help"]) == 0
    assert "--json prints base units" in capsys.readouterr().out
