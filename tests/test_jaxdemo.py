"""trainium_lab.jaxdemo: every JAX demonstration's count, asserted; the StableHLO text is
stable; nothing reaches stderr; bad input raises ValueError naming the parameter."""

import os

import pytest

from trainium_lab import jaxdemo as j


def test_three_shapes_three_compiles_and_a_repeated_shape_none():
    df = j.shape_compiles(batches=(8, 16, 32), repeat=16)
    assert df.new_compiles.tolist() == [1, 1, 1, 0]
    assert df.cache_size.tolist() == [1, 2, 3, 3]  # the jitted function's own count agrees


def test_value_branch_error_static_graphs_and_select():
    d = j.branch_compiles((True, False, True, False))
    assert d.traced_error == "TracerBoolConversionError"
    assert d.static.new_compiles.tolist() == [1, 1, 0, 0]  # one graph per value of the flag
    assert d.select.new_compiles.tolist() == [1, 0, 0, 0]  # jnp.where: one graph, Neuron-safe
    assert not hasattr(d, "cond")  # JAX NeuronX Known Issues: "jax.lax.cond is not supported"


def test_branch_demo_uses_no_lax_cond():
    """The Neuron-safe forms only: the module's programs never call lax.cond."""
    import inspect

    assert "lax.cond(" not in inspect.getsource(j)


def test_static_loop_is_a_constant_bound_traced_loop_an_input():
    """JAX NeuronX supports only static while loops: a Python-int bound is a constant in the
    program (one program per trip count); a traced bound is a run-time input (one program,
    but a dynamic loop)."""
    df = j.static_loop_compiles((4, 8, 4))
    static, traced = df[df["style"] == "static bound"], df[df["style"] == "traced bound"]
    assert static.new_compiles.tolist() == [1, 1, 0]
    assert traced.new_compiles.tolist() == [1, 0, 0]
    assert set(static.bound) == {"a constant in the program"}
    assert set(traced.bound) == {"an input of the program"}


def test_masked_shapes_compile_once_boolean_indexing_per_count():
    d = j.masked_shape_compiles((3, 5, 3, 7), n_rows=8)
    assert d.traced_error == "NonConcreteBooleanIndexError"
    t = d.table.set_index("style")
    assert t.compiles.tolist() == [3, 1, 1]            # 3 distinct counts; one fixed shape
    assert t.loc["boolean index, then jit", "rows_per_step"] == "3, 5, 7"
    assert t.loc["fixed-size mask (jnp.where)", "rows_per_step"] == "8"


def test_step_hlo_in_both_dialects():
    hlo = j.step_hlo(8, 16, dialect="hlo")
    assert hlo.startswith("HloModule") and "f32[8,16]" in hlo and "tanh(" in hlo
    assert "stablehlo." not in hlo
    with pytest.raises(ValueError, match="dialect"):
        j.step_hlo(8, 16, dialect="neff")


def test_xla_dump_writes_the_program_before_optimisation():
    files = j.xla_dump_files()
    assert "before_optimizations.txt" in files
    assert any("after_optimizations" in f for f in files)


def test_unrolled_loop_grows_scan_does_not():
    df = j.loop_vs_scan((2, 8, 32), compile=False)
    loop = df[df["style"] == "python loop"].set_index("depth").hlo_ops
    scan = df[df["style"] == "lax.scan"].set_index("depth").hlo_ops
    assert scan.nunique() == 1
    assert loop[32] == 16 * loop[2] and loop[8] == 4 * loop[2]
    assert loop[32] > 5 * scan[32]


def test_loop_vs_scan_counts_shown_in_the_notebook():
    df = j.loop_vs_scan((2, 8, 16), compile=False)
    assert df[df["style"] == "python loop"].hlo_ops.tolist() == [8, 32, 64]
    assert df[df["style"] == "lax.scan"].hlo_ops.tolist() == [14, 14, 14]


def test_loop_vs_scan_compile_times_are_reported():
    df = j.loop_vs_scan((2,), compile=True)
    assert (df.compile_s > 0).all()


def test_ragged_last_batch_adds_one_compile():
    df = j.ragged_batch_compiles(1000, 64, n_epochs=2).set_index("strategy")
    assert df.loc["keep the short last batch", "compiles"] == 2
    assert df.loc["drop_last", "compiles"] == 1
    assert df.loc["pad the last batch", "compiles"] == 1
    assert df.loc["drop_last", "samples_used"] == 960
    assert df.loc["keep the short last batch", "shapes"] == "64×16, 40×16"


def test_item_cuts_the_step_into_two_programs():
    df = j.graph_cut_compiles(3).set_index("style")
    assert df.loc["one graph", "programs_compiled"] == 1
    assert df.loc["cut by .item()", "programs_compiled"] == 2
    assert df.loc["cut by .item()", "dispatches_per_step"] == 2


def test_persistent_cache_keys_on_program_and_options(tmp_path):
    df = j.persistent_cache_demo(str(tmp_path))
    assert df.cache_misses.tolist() == [1, 0, 1, 1]
    assert df.cache_hits.tolist() == [0, 1, 0, 0]
    assert df.entries_on_disk.tolist() == [1, 1, 2, 3]
    assert len([p for p in os.listdir(tmp_path) if p.endswith("-cache")]) == 3
    # settings restored: later compiles do not write there
    j.shape_compiles(batches=(3,), repeat=3)
    assert len([p for p in os.listdir(tmp_path) if p.endswith("-cache")]) == 3


def test_persistent_cache_default_directory_is_temporary_and_removed(monkeypatch):
    made = []
    real = j.tempfile.mkdtemp

    def spy(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(j.tempfile, "mkdtemp", spy)
    j.persistent_cache_demo()
    assert len(made) == 1 and not os.path.exists(made[0])


def test_hlo_text_is_stable_and_carries_the_shapes():
    a, b = j.step_hlo(8, 16), j.step_hlo(8, 16)
    assert a == b
    assert "tensor<8x16xf32>" in a and "stablehlo.tanh" in a
    assert "loc(" not in a  # no source locations (machine paths) in the text
    assert j.hlo_op_count(a) == 8  # the count the notebook prints
    assert j.step_hlo(4, 16) != a


def test_demos_print_nothing(capfd):
    j.shape_compiles(batches=(5,), repeat=5)
    j.branch_compiles((True,))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("call, name", [
    (lambda: j.step_hlo(0, 16), "batch"), (lambda: j.step_hlo(8, "16"), "d_model"),
    (lambda: j.hlo_op_count(None), "text"),
    (lambda: j.shape_compiles(batches="8"), "batches"), (lambda: j.shape_compiles(batches=[]), "batches"),
    (lambda: j.shape_compiles(batches=[10**30]), "batches"), (lambda: j.shape_compiles(repeat=None), "batch"),
    (lambda: j.branch_compiles(None), "flags"), (lambda: j.branch_compiles([1]), "flags"),
    (lambda: j.loop_vs_scan([float("nan")]), "depths"), (lambda: j.loop_vs_scan((2,), compile="y"), "compile"),
    (lambda: j.ragged_batch_compiles(0), "n_samples"), (lambda: j.ragged_batch_compiles(10, 1e308), "batch_size"),
    (lambda: j.graph_cut_compiles(-1), "n_steps"), (lambda: j.call_times(repeats=0), "repeats"),
    (lambda: j.call_times(batches=None), "batches"), (lambda: j.persistent_cache_demo(5), "cache_dir"),
    (lambda: j.persistent_cache_demo("/nonexistent/dir/x"), "cache_dir"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


BAD = [None, "x", float("nan"), 1e308, 10**30, -1, [1, "a"], {"a": 1}]
FUNCTIONS = [n for n in j.__all__ if n not in ("CompileLog", "BranchDemo", "MaskDemo", "watch_compiles")]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_fuzz_every_public_function_raises_only_value_error(name):
    """Each parameter in turn gets a bad value (the others keep their defaults): only
    ValueError may come out, before any program is built."""
    import inspect

    fn = getattr(j, name)
    for p in inspect.signature(fn).parameters.values():
        for bad in BAD:
            if (bad is None and p.default is None) or (p.name == "text" and isinstance(bad, str)):
                continue  # valid there
            with pytest.raises(ValueError):
                fn(**{p.name: bad})
