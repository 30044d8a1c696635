"""Presentation lives in trainium_lab.views, not in the models (issue 13): the labels of the
rank-to-chip map, the NeuronCore block diagram and the planner's sentences are made there from
the models' numbers; the models keep their old method names as thin delegates."""

import ast
import dataclasses
import importlib
import pkgutil
import sys
from pathlib import Path

import pandas as pd
import pytest

import trainium_lab
from trainium_lab import cores, layouts, topology, views

ALLOWED_TOP = {"numpy", "pandas", "ml_dtypes", "trainium_lab"}
PRESENTATION = {"altair", "ipywidgets", "IPython", "textwrap", "trainium_lab.views",
                "trainium_lab.charts", "trainium_lab.widgets", "vl_convert"}
NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "__main__", "jaxdemo"}


def model_files():
    """Each model module's file; each file of a model package (``layouts/``) on its own."""
    root = Path(trainium_lab.__file__).parent
    for info in pkgutil.iter_modules(trainium_lab.__path__):
        if info.name in NOT_MODELS:
            continue
        if info.ispkg:
            for path in sorted((root / info.name).glob("*.py")):
                yield f"{info.name}.{path.stem}", path
        else:
            yield info.name, root / (info.name + ".py")


@pytest.mark.parametrize("name,path", list(model_files()))
def test_models_import_no_presentation_at_module_level(name, path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            top = n.split(".")[0]
            assert top in ALLOWED_TOP or top in sys.stdlib_module_names, f"{name} imports {n}"
            assert not any(n == p or n.startswith(p + ".") for p in PRESENTATION), f"{name} imports {n}"


def test_chip_map_is_the_models_numbers_plus_labels():
    p = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="pp-tp-dp")
    groups = p.chip_groups("tp", 3)
    assert all(pd.api.types.is_numeric_dtype(groups[c]) or pd.api.types.is_bool_dtype(groups[c])
               for c in groups.columns), "the model's chip table holds numbers only"
    shown = views.chip_map(p, "tp", 3)
    pd.testing.assert_frame_equal(shown.drop(columns=["label", "colour"]), groups)
    pd.testing.assert_frame_equal(p.chip_map("tp", 3), shown)   # the old name still works
    assert list(shown.columns) == ["global_chip", "system", "instance", "chip", "row", "col", "label",
                                   "first_rank", "last_rank", "group", "n_groups", "colour", "highlighted"]
    assert set(shown.colour[shown.n_groups > 1]) == {"mixed"}
    single = topology.place(tp=8, pp=4, dp=2, system="trn2.48xlarge", lnc=2)
    assert views.chip_map(single).label.iloc[0] == "inst0"
    with pytest.raises(ValueError, match="placement"):
        views.chip_map("not a placement")


def test_neuroncore_blocks_moved_with_the_same_table():
    pd.testing.assert_frame_equal(cores.neuroncore_blocks("trn3"), views.neuroncore_blocks("trn3"))
    b = views.neuroncore_blocks("trn2")
    assert (b.x < b.x2).all() and (b.y < b.y2).all()


def test_plan_explanation_is_a_view_and_the_plan_has_no_wall_clock():
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64)
    assert not hasattr(p, "explain")   # the sentences are views.explain_plan's alone
    assert "elapsed_s" not in {f.name for f in dataclasses.fields(layouts.Plan)}
    q = layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64)
    assert p.table.equals(q.table)   # nothing in the result depends on the clock
    with pytest.raises(ValueError, match="plan"):
        views.explain_plan(p.table)


def test_plan_fitting_is_the_one_fits_rule():
    p = layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64, min_headroom_fraction=0.0)
    for frac in (0.0, 0.1, 0.3):
        t = p.fitting(frac)
        assert (t.headroom_gib >= frac * t.hbm_gib).all()
        assert list(t["rank"]) == list(range(1, len(t) + 1))
        best = t.iloc[0]
        lay = layouts.layout("llama3-8b", int(best.tp), int(best.pp), int(best.dp),
                             zero_stage=int(best.zero_stage), micro_batch=int(best.micro_batch),
                             n_micro_batches=int(best.n_micro_batches), recompute=best.recompute,
                             system="trn2.48xlarge")
        assert layouts.evaluate(lay, min_headroom_fraction=frac).fits
    pd.testing.assert_frame_equal(p.fitting(0.0), p.table)
    with pytest.raises(ValueError, match="min_headroom_fraction"):
        p.fitting(1.5)


# --------------------------------------------------------------------------- results not in attrs

def test_typed_results_carry_what_attrs_carried():
    """Issue 13: results travel in small dataclasses, not in DataFrame.attrs. The old functions
    keep their attrs only for callers written before (marked legacy); they agree with the new
    results, and the new results' tables carry no attrs."""
    from trainium_lab import intro, numerics, reliability

    f = intro.hbm_fit(70e9, "bfloat16", "trn2", reserve_share=0.0)   # chapter 00's typed result
    df = intro.weights_vs_hbm(70e9, 2, "trn2")
    assert df.attrs["chips_needed"] == f.min_chips == 2 and f.parts().attrs == {}

    b = numerics.bit_pattern(-0.1, "float8_e4m3fn")
    legacy = numerics.bit_fields(-0.1, "float8_e4m3fn").attrs
    assert (legacy["stored"], legacy["sign"], legacy["exponent"], legacy["mantissa"], legacy["kind"]) == \
        (b.stored, b.sign, b.exponent, b.mantissa, b.kind)
    assert legacy["formula"] == views.bit_formula(b)

    r = numerics.stochastic_draws(1.001, "bfloat16", 500, seed=3)
    legacy = numerics.rounding_draws(1.001, "bfloat16", 500, seed=3).attrs
    assert legacy == {"value": r.value, "nearest": r.nearest, "mean": r.mean, "n_draws": 500,
                      "format": "bfloat16"}

    t = numerics.regression_training(0.05, 50, "bfloat16", record_every=10)
    legacy = numerics.train_linear_regression(0.05, 50, "bfloat16", record_every=10)
    assert legacy.attrs["noise_floor"] == t.noise_floor and t.losses.attrs == {}
    assert set(t.final_losses()) == set(numerics.VARIANTS)

    m = numerics.master_weights_comparison(70e9, "trn2")
    legacy = numerics.master_weights_saving(70e9, "trn2").attrs
    assert legacy["saving_gib"] == m.saving_gib and legacy["saving_chips"] == m.saving_chips

    s = reliability.stopped_chips("chip", replacement="instance")
    legacy = reliability.blast_radius("chip", replacement="instance").attrs
    assert legacy == {"n_failed": s.n_failed, "n_replaced": s.n_replaced, "n_stalled": s.n_stalled,
                      "n_stopped": s.n_stopped}
    assert s.n_failed + s.n_replaced + s.n_stalled == s.n_stopped == len(s.chips)
    assert (s.chips.status == "failed").sum() == s.n_failed

    table = cores.core_count_table("trn2-ultraserver")
    assert table.attrs == {}
    long = views.core_counts_long(table, cores.core_counts("trn2-ultraserver").lnc)
    assert set(long.what) == {"chips", "physical cores", "logical cores (LNC=2)"}
    assert long.groupby("what")["count"].sum()["logical cores (LNC=2)"] == table.logical_cores.sum()


def test_no_new_result_in_dataframe_attrs():
    """Every write to DataFrame.attrs in a model module is one of the legacy wrappers' (kept for
    callers in chapters 00-06 until they switch to the typed results)."""
    writes = []
    for name, path in model_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            code = line.split("#")[0]
            if ".attrs" in code and ("=" in code.replace("==", "") or ".update(" in code):
                statement = " ".join(lines[i:i + 3])   # the marker may close a wrapped statement
                writes.append((name, i + 1, "# legacy" in statement))
    assert writes and all(legacy for _, _, legacy in writes), writes
    assert len(writes) == 6   # intro.weights_vs_hbm, numerics x 4, reliability.blast_radius
