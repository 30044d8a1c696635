"""Presentation lives in trainium_lab.views, not in the models (issue 13): the labels of the
rank-to-chip map, the NeuronCore block diagram and the planner's sentences are made there from
the models' numbers; the chip map and the block diagram have no model-side name left."""

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
NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "diagrams", "__main__", "jaxdemo"}


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
    assert not hasattr(p, "chip_map")   # one home for the labels: the model has no display method
    assert list(shown.columns) == ["global_chip", "system", "instance", "chip", "row", "col", "label",
                                   "first_rank", "last_rank", "group", "n_groups", "colour", "highlighted"]
    assert set(shown.colour[shown.n_groups > 1]) == {"mixed"}
    single = topology.place(tp=8, pp=4, dp=2, system="trn2.48xlarge", lnc=2)
    assert views.chip_map(single).label.iloc[0] == "inst0"
    with pytest.raises(ValueError, match="placement"):
        views.chip_map("not a placement")


def test_neuroncore_blocks_live_only_in_views():
    from trainium_lab import generations

    assert not hasattr(cores, "neuroncore_blocks") and not hasattr(generations, "neuroncore_blocks")
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

def _frames(result):
    """Every DataFrame a result carries: itself, or its dataclass fields."""
    if isinstance(result, pd.DataFrame):
        return [result]
    return [v for v in vars(result).values() if isinstance(v, pd.DataFrame)]


def test_results_travel_in_typed_objects_not_attrs():
    """Issue 13: the functions that used to tuck results into DataFrame.attrs return small
    frozen dataclasses (or a plain table); no DataFrame they hand out carries attrs."""
    from trainium_lab import intro, numerics, reliability

    calls = {
        "intro.weights_vs_hbm": (intro.weights_vs_hbm(70e9, 2, "trn2"), pd.DataFrame),
        "numerics.bit_fields": (numerics.bit_fields(-0.1, "float8_e4m3fn"), numerics.BitPattern),
        "numerics.rounding_draws": (numerics.rounding_draws(1.001, "bfloat16", 500, seed=3),
                                    numerics.RoundingDraws),
        "numerics.train_linear_regression": (
            numerics.train_linear_regression(0.05, 50, "bfloat16", record_every=10),
            numerics.TrainingCurves),
        "numerics.master_weights_saving": (numerics.master_weights_saving(70e9, "trn2"),
                                           numerics.MasterWeightsSaving),
        "reliability.blast_radius": (reliability.blast_radius("chip", replacement="instance"),
                                     reliability.BlastRadius),
    }
    for name, (result, kind) in calls.items():
        assert isinstance(result, kind), name
        assert kind is pd.DataFrame or dataclasses.is_dataclass(result), name
        frames = [result] if kind is pd.DataFrame else _frames(result)
        if kind is numerics.BitPattern:
            frames = [result.table()]
        assert frames and all(f.attrs == {} for f in frames), name
        if kind is not pd.DataFrame:   # a learner meets these: a short summary, not a dump
            assert 0 < len(result._repr_markdown_()) < 400, name
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(result, "format", "x")

    s = calls["reliability.blast_radius"][0]
    assert s.n_failed + s.n_replaced + s.n_stalled == s.n_stopped == len(s.chips)
    assert (s.chips.status == "failed").sum() == s.n_failed
    b = calls["numerics.bit_fields"][0]
    assert views.bit_formula(b).endswith(f"= {b.stored:.8g}")

    table = cores.core_count_table("trn2-ultraserver")
    assert table.attrs == {}
    long = views.core_counts_long(table, cores.core_counts("trn2-ultraserver").lnc)
    assert set(long.what) == {"chips", "physical cores", "logical cores (LNC=2)"}
    assert long.groupby("what")["count"].sum()["logical cores (LNC=2)"] == table.logical_cores.sum()


def _attrs_uses(source: str) -> list[int]:
    """Lines of ``source`` that use an ``.attrs`` attribute (read, write or update)."""
    return sorted({node.lineno for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Attribute) and node.attr == "attrs"})


def _model_sources():
    """(name, path) of every model module's source, packages included."""
    root = Path(trainium_lab.__file__).parent
    for path in sorted(root.rglob("*.py")):
        top = path.relative_to(root).parts[0].removesuffix(".py")
        if top not in NOT_MODELS:
            yield str(path.relative_to(root)), path


def test_no_model_module_uses_dataframe_attrs():
    """No model module reads or writes DataFrame.attrs (issue 13; pandas documents attrs as
    experimental and drops it in many operations): results travel in dataclasses."""
    # the detector itself finds the forms a result could be tucked in with
    bad = "df.attrs['n'] = 1\ndf.attrs.update(n=1)\nx = df.attrs\ndf.attrs = {}\n"
    assert _attrs_uses(bad) == [1, 2, 3, 4]
    assert _attrs_uses("attrs = {}\nrow['attrs']\n# df.attrs\n") == []
    found = {name: _attrs_uses(path.read_text(encoding="utf-8")) for name, path in _model_sources()}
    assert {"numerics.py", "reliability.py", "intro.py", "cores.py"} <= set(found)
    assert {name: lines for name, lines in found.items() if lines} == {}
