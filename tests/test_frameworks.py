"""Training frameworks as data (issue 26): what each framework can run, its recipes and checkpoints,
and the planner that searches only what a named framework runs.

Sources: AWS Neuron docs — TorchNeuron overview (frameworks/torch/pytorch-native-overview.rst: FSDP,
DTensor, DDP, TP; "Pipeline Parallelism (PP) will be available soon"), the NxDT end-of-support
announcement (2.28 the last release), the archived NxD Training features page (ZeRO-1, 1F1B and
interleaved PP, load on one DP rank and broadcast), NxD Standard Mixed Precision (FP32 master weights
and optimizer states, FP32 gradient accumulation, use_master_weights_in_ckpt False).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainium_lab import frameworks, layouts, planning, sizing
from trainium_lab.cli import main
from trainium_lab.units import GiB
from trainium_lab.views import explain_plan


def test_every_framework_has_every_field_with_a_source():
    df = __import__("trainium_lab.specs", fromlist=["read_data_csv"]).read_data_csv("frameworks.csv")
    fields = set(df[df.framework == "nxd"].field)
    for key in frameworks.FRAMEWORK_KEYS:
        assert set(df[df.framework == key].field) == fields, key
    assert len(frameworks.frameworks()) == 3


def test_status_and_release_that_ended_nxd():
    # announce-eos-nxdt-nxd-core-training.rst: "Neuron SDK release 2.28 ... will be the last release to
    # include the NeuronX Distributed Training (NxDT) library"
    nxd = frameworks.framework("nxd")
    assert (nxd.status, nxd.status_release) == ("end-of-support", "2.28")
    assert frameworks.framework("torchneuron").status == "closed-beta"   # overview l.22: "closed Beta program"
    assert frameworks.framework("jax").status == "beta"   # "JAX Neuron (beta)"


def test_what_each_framework_offers():
    nxd, tn = frameworks.framework("nxd"), frameworks.framework("torchneuron")
    assert nxd.zero_stages == (0, 1)                      # ZeRO-1 only
    assert nxd.pipeline_schedules == ("1f1b", "interleaved")
    assert nxd.interleaved_rule == "pp*v=L"
    assert not tn.has_pp and 3 in tn.zero_stages          # FSDP, no PP yet


# ---------------------------------------------------------------- recipes: documented bytes per parameter


def test_nxd_standard_mixed_precision_is_18_bytes_with_6_unsharded():
    # standard_mixed_precision.rst: BF16 weights, FP32 gradient accumulation (local: not sharded),
    # FP32 master weights and Adam states (sharded by ZeRO-1): 2 + 4 + 4 + 4 + 4
    r = sizing.recipe("nxd-standard-mixed-precision")
    assert r.bytes_per_param == 18
    assert sizing.recipe_split(r.key, 1) == (12.0, 6.0)
    assert frameworks.framework("nxd").recipe == r.key


def test_nxd_8b_zero1_on_16_chips_needs_about_50_gib_per_chip():
    # audit 2026-12, M1: 8B ZeRO-1 on 16 chips is 50.3 GiB per chip of state, not 35.4
    sharded, whole = sizing.recipe_split("nxd-standard-mixed-precision", 1)
    per_chip = 8e9 * (whole + sharded / 16) / GiB
    assert per_chip == pytest.approx(50.3, abs=0.05)
    course = 8e9 * sum(x / d for x, d in zip(sizing.recipe_split("bf16-adam", 1)[::-1], (1, 16))) / GiB
    assert course == pytest.approx(35.4, abs=0.05)


def test_torch_amp_recipe_is_16_bytes_with_fp32_parameters():
    # PyTorch AMP: FP32 parameters (4) and gradients (4), Adam moments (8); no separate master copy
    r = sizing.recipe("fp32-params-amp-adam")
    assert (r.weights, r.gradients, r.master, r.bytes_per_param) == (4, 4, 0, 16)


def test_checkpoint_bytes_per_framework():
    # NxD: use_master_weights_in_ckpt False -> BF16 weights + FP32 Adam = 10 B/param (14 with master)
    assert frameworks.checkpoint_bytes_per_param("nxd") == 10.0
    assert frameworks.checkpoint_bytes_per_param("nxd", master_weights=True) == 14.0
    assert frameworks.checkpoint_bytes_per_param("torchneuron") == 12.0
    assert planning.checkpoint_bytes(8e9, framework="nxd") == 8e9 * 10
    assert planning.checkpoint_bytes(8e9) == 8e9 * 14      # the course's recipe, no framework
    with pytest.raises(ValueError, match="framework"):
        frameworks.checkpoint_bytes_per_param("jax")       # not documented


def test_nxd_loads_on_one_dp_rank_then_broadcasts():
    assert frameworks.framework("nxd").checkpoint_load == "one-dp-rank-broadcast"


# ---------------------------------------------------------------- what a framework can run


def test_the_old_405b_winner_is_runnable_by_no_framework():
    # ZeRO-3 with PP2: TorchNeuron has no PP, NxD no ZeRO-3
    assert frameworks.runnable_by(tp=64, pp=2, dp=4, zero_stage=3, n_layers=126) == ()


def test_nxd_interleaving_needs_pp_times_v_equal_layers():
    ok = frameworks.runnable_mask("nxd", [8] * 3, [4] * 3, [2] * 3, [1] * 3, [1] * 3, [2, 8, 4], 32)
    assert ok.tolist() == [False, True, False]


def test_the_planner_interleaves_for_nxd_only_where_pp_times_v_equals_the_layers():
    # AWS Neuron docs, NxD pipeline-parallelism developer guide (aws-nxd-pp-guide): the interleaved schedule
    # needs virtual_pipeline_size × pp = the layer count; a constraint of the search, not left out
    kw = dict(system="trn2.48xlarge", n_systems=2, lnc=2, global_batch=256, virtual_stages=(1, 2, 4, 8, 16))
    nxd = layouts.plan("llama3-8b", framework="nxd", **kw).all
    free = layouts.plan("llama3-8b", **kw).all
    il = nxd[nxd.virtual_stages > 1]
    assert len(il) > 0 and set(il.pp * il.virtual_stages) == {32}
    assert sorted(set(zip(il.pp, il.virtual_stages))) == [(2, 16), (4, 8), (8, 4), (16, 2)]
    loose = free[free.virtual_stages > 1]
    assert (loose.pp * loose.virtual_stages != 32).any()   # without the framework the rule does not apply
    # TorchNeuron has no pipeline schedule yet, JAX documents none: neither interleaves
    for fw in ("torchneuron", "jax"):
        try:
            rows = layouts.plan("llama3-8b", framework=fw, **kw).all
        except ValueError:
            continue
        assert (rows.virtual_stages == 1).all() and (rows.pp == 1).all()


def test_bad_framework_names_the_parameter():
    with pytest.raises(ValueError, match="framework"):
        layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64, framework="megatron")
    with pytest.raises(ValueError, match="zero_stages"):
        layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64, framework="nxd", zero_stages=(3,))
    with pytest.raises(ValueError, match="tp"):
        frameworks.runnable_mask("nxd", [0], [1], [1], [1], [0], [1], 32)


CASES = [("llama3-8b", "trn2.48xlarge", 1), ("llama3-70b", "trn2-ultraserver", 1),
         ("llama3-405b", "trn2-ultraserver", 2), ("mixtral-8x7b", "trn2.48xlarge", 2)]


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), fw=st.sampled_from(frameworks.FRAMEWORK_KEYS),
       gb=st.sampled_from([128, 256, 512]), vs=st.sampled_from([(1,), (1, 2, 4)]))
def test_planner_never_returns_a_layout_the_framework_cannot_run(case, fw, gb, vs):
    model, system, n = case
    try:
        p = layouts.plan(model, system=system, n_systems=n, lnc=2, global_batch=gb, framework=fw,
                         virtual_stages=vs)
    except ValueError as exc:
        assert "framework" in str(exc) or "global_batch" in str(exc)
        return
    rows = p.all
    ok = frameworks.runnable_mask(fw, rows.tp, rows.pp, rows.dp, rows.ep, rows.zero_stage,
                                  rows.virtual_stages, p.model.n_layers)
    assert ok.all()
    if not p.table.empty:
        assert fw in p.runnable_by()
        assert p.settings["recipe_name"] == (frameworks.framework(fw).recipe or "bf16-adam")


def test_no_framework_says_which_can_run_the_winner():
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64)
    lines = explain_plan(p)
    who = p.runnable_by()
    text = lines[2]
    if who:
        assert all(frameworks.framework(k).name in text for k in who)
    else:
        assert "no Neuron training framework can run the winner" in text


def test_405b_default_winner_is_not_runnable_and_the_explanation_says_so():
    # the audit's case (chapter 05 at 40 % MFU): TP64 ranks × PP2 × DP4 ZeRO-3; on two UltraServers the
    # DP all-reduce is now hierarchical (issue 24) and a runnable layout wins, so the same 128 chips
    # as eight trn2.48xlarge joined by EFA, where each DP group has one rank per instance
    p = layouts.plan("llama3-405b", system="trn2.48xlarge", n_systems=8, lnc=2, global_batch=512, mfu=0.40)
    assert p.best.label.startswith("TP64 ranks = 16 chips × PP2×DP4 ZeRO-3")
    assert p.runnable_by() == ()
    assert "no Neuron training framework can run the winner" in explain_plan(p)[2]


def test_named_framework_appears_in_explanation_and_export():
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64, framework="nxd")
    assert "NxD Training" in explain_plan(p)[2]
    run = planning.plan_run("llama3-8b", 1e11, system="trn2.48xlarge", n_systems=1, usd_per_hour=40.0,
                            framework="nxd")
    assert run.inputs["framework"] == "nxd"
    assert run.inputs["recipe_name"] == "nxd-standard-mixed-precision"
    assert run.results["checkpoint_bytes"] == pytest.approx(8e9 * 10)
    from trainium_lab.views.planning import to_markdown
    assert "Training framework: **NxD Training" in to_markdown(run)


def test_plan_run_rejects_a_layout_the_framework_cannot_run():
    lay = layouts.layout("llama3-8b", tp=8, pp=2, dp=4, zero_stage=3, system="trn2.48xlarge", lnc=2,
                         micro_batch=1, n_micro_batches=8)
    with pytest.raises(ValueError, match="layout"):
        planning.plan_run("llama3-8b", 1e11, layout=lay, usd_per_hour=40.0, framework="torchneuron")


def test_cli_framework_flag(capsys):
    assert main(["plan", "--model", "llama3-8b", "--tokens", "100B", "--price", "40",
                 "--framework", "nxd"]) == 0
    assert "NxD Training" in capsys.readouterr().out
    assert main(["plan", "--model", "llama3-8b", "--tokens", "100B", "--framework", "megatron"]) == 2
    err = capsys.readouterr().err
    assert "--framework" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- overlap as an honest parameter


def test_overlap_default_is_labelled_and_has_a_range():
    d = layouts.overlap_default()
    assert d.basis == "assumption" and d.low < d.default <= d.high


def test_405b_winner_depends_on_overlap_and_the_explanation_says_so():
    # issue 26 item 4: at half overlap ZeRO-2 wins (eight trn2.48xlarge: DP over EFA, one rank per
    # instance in each group, so the hierarchical all-reduce sends all of it across EFA)
    p = layouts.plan("llama3-405b", system="trn2.48xlarge", n_systems=8, lnc=2, global_batch=512, mfu=0.40)
    s = p.overlap_sensitivity()
    assert bool(s.same_winner.iloc[0]) and not bool(s.same_winner.iloc[-1])
    assert "ZeRO-2" in s.label.iloc[-1]
    assert "The winner depends on it" in explain_plan(p)[-1]


def test_overlap_sensitivity_matches_a_replan():
    p = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512, mfu=0.40)
    q = layouts.plan("llama3-405b", system="trn2-ultraserver", n_systems=2, lnc=2, global_batch=512,
                     dp_overlap=0.5, mfu=0.40)
    low = p.overlap_sensitivity((0.5,)).iloc[0]
    assert low.label == q.best.label
    assert low.tokens_per_s == pytest.approx(float(q.best.tokens_per_s), rel=1e-12)


# ---------------------------------------------------------------- the auto-cast default, everywhere


def _course_texts():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for nb in sorted((root / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells)
        outs = "\n".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", ()))
        yield nb.name, " ".join((text + "\n" + outs).split())
    for path in [*(root / "docs").rglob("*.md"), root / "README.md", *(root / "trainium_lab").rglob("*.py"),
                 *(root / "trainium_lab" / "data").glob("*.md")]:
        yield path.name, " ".join(path.read_text(encoding="utf-8").split())


def test_auto_cast_default_agrees_everywhere_it_appears():
    # neuronx-cc CLI reference (v2.32.0): --auto-cast "(Default: none)"; release notes 2.27.0: the default
    # changed from matmul to none. No text of the course may still call it on by default.
    import re

    from trainium_lab import compilation

    used = compilation.compiler_facts("neuronx-cc").query("status == 'used'").set_index("fact")["value"]
    assert used["--auto-cast default"] == "none"
    stale = re.compile(r"auto-?cast is on by default|casts? FP32 matrix multiplications to BF16 by default|"
                       r"by default, the compiler casts|auto-?cast(ing)? defaults? to `?matmult?\b", re.I)
    says_none = {}
    for name, text in _course_texts():
        assert not stale.search(text), f"{name}: {stale.search(text).group(0)}"
        says_none[name] = bool(re.search(r"--auto-cast`? defaults to `?none", text))
    assert says_none["02_numerics.ipynb"] and says_none["07_compilation.ipynb"]
    assert "--auto-cast default: none" in dict(_course_texts())["02_numerics.ipynb"]
