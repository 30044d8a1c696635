"""Objects a learner meets read well (issue 13): a short repr without dumps of presets or
source strings, and a one-paragraph Markdown summary with units formatted, while the fields
stay in base units for code."""

import re

import pytest

from trainium_lab import cores, layouts, serving, sizing, specs, topology


def objects():
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, lnc=2, n_micro_batches=16)
    placed = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2)
    return {
        "Chip": specs.chip("trn2"), "NeuronCore": specs.core("v3"),
        "System": specs.system("trn2-ultraserver"), "Link": specs.link("trn2-efa"),
        "Accelerator": specs.accelerator("h100"), "ModelPreset": sizing.preset("llama3-405b"),
        "StateRecipe": sizing.recipe("bf16-adam"), "JobSizing": sizing.size_job(70e9, 2e12),
        "Layout": lay, "LayoutEstimate": layouts.evaluate(lay),
        "Plan": layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64),
        "Cluster": placed.cluster, "Level": placed.cluster.levels[1], "Placement": placed,
        "CoreCounts": cores.core_counts("trn2.48xlarge"), "Replica": serving.replica("llama3-8b", tp=4),
    }


@pytest.mark.parametrize("name", list(objects()))
def test_short_repr_and_markdown_summary(name):
    obj = objects()[name]
    text = repr(obj)
    assert text.startswith(f"{name}(") and len(text) <= 260, text
    assert "source" not in text.lower() and "\n" not in text
    md = obj._repr_markdown_()
    assert md.startswith("**") or md.startswith(f"**{name}") or "**" in md, md
    # counts and sizes formatted, not raw floats (a FLOP count is written as 8.40e+23 FLOPs)
    assert "e+" not in re.sub(r"\d\.\d+e\+\d+ FLOPs", "", md), md


def test_the_issues_examples():
    chip = specs.chip("trn2")
    assert "hbm_bytes=103079215104.0" not in repr(chip) and "96.0 GiB" in repr(chip)
    assert chip.hbm_bytes == 103079215104.0   # the field stays in base units
    lay = layouts.layout("llama3-405b", tp=64, pp=4, dp=2, lnc=2)
    assert "Meta" not in repr(lay) and "sources" not in repr(lay)
    assert "GiB" in layouts.evaluate(lay)._repr_markdown_()
    plan = sizing.size_job(70e9, 2e12)
    assert "70B parameters" in repr(plan) and "1.0 TiB" in plan._repr_markdown_()
