"""trainium_lab.compilation: bucketing (exact optimum), bucket-set cost, cache keys and the
training-run compile model, with the published figures it must reproduce."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from trainium_lab import compilation as c
from trainium_lab.units import GiB, minute


# ----------------------------------------------------------- published figures

def test_uniform_lengths_1_to_128_padding_figures():
    """Issue 16's check, derived by hand. Uniform integer lengths 1..128 (one sequence each):
    real tokens = 1 + 2 + ... + 128 = 128·129/2 = 8,256.
    {128}: every sequence padded to 128 → 128 × 128 = 16,384 computed tokens; padding
    16,384 − 8,256 = 8,128; 8,128 / 16,384 = 0.49609 → 49.6 %.
    {64, 128}: lengths 1..64 padded to 64 (64 × 64 = 4,096), 65..128 to 128 (64 × 128 =
    8,192) → 12,288 computed; padding 12,288 − 8,256 = 4,032; 4,032 / 12,288 = 0.328125
    → 32.8 %. Both are exact fractions, so the test is exact."""
    lengths = range(1, 129)
    assert c.padded_tokens(lengths, [128]) == 16_384
    assert c.padding_fraction(lengths, [128]) == 8_128 / 16_384
    assert round(100 * c.padding_fraction(lengths, [128]), 1) == 49.6
    assert c.padded_tokens(lengths, [64, 128]) == 12_288
    assert c.padding_fraction(lengths, [64, 128]) == 4_032 / 12_288
    assert round(100 * c.padding_fraction(lengths, [64, 128]), 1) == 32.8
    # and {64, 128} is the optimal pair: the DP finds it
    assert c.optimal_buckets(lengths, 2) == (64, 128)


def test_wikipedia_histogram_reproduces_the_published_packing_limit():
    """Krell et al. 2021 (arXiv:2107.02027), code and data in graphcore/tutorials
    blogs_code/packedBERT (README.md): the Wikipedia BERT pre-training histogram at
    maximum length 512 holds 16,279,552 sequences and its "speed-up theoretical limit"
    is 2.0013 = computed tokens / real tokens when every sequence is padded to 512, i.e.
    1 / (1 − padding fraction). The README prints 4 decimals."""
    h = c.length_histogram("wikipedia-bert-512")
    assert int(h.n_sequences.sum()) == 16_279_552
    pad = c.padding_fraction(h.n_tokens, [512], counts=h.n_sequences)
    assert 1 / (1 - pad) == pytest.approx(2.0013, abs=5e-5)
    # about half of every padded batch is padding: the reason packing and buckets pay
    assert 0.50 < pad < 0.501


def test_squad_histogram_is_the_published_one():
    """The same source's SQuAD 1.1 histogram (maximum length 384): 88,641 sequences, the
    last bin (truncated to 384) holding 1,054."""
    h = c.length_histogram("squad-1.1-384")
    assert int(h.n_sequences.sum()) == 88_641
    assert int(h.n_tokens.max()) == 384 and int(h.n_sequences.iloc[-1]) == 1_054


def test_empty_flags_hash_matches_the_neuron_cache_example():
    """The Neuron Persistent Cache page's example entries end in +d41d8cd9 for a run with
    no extra compiler flags; d41d8cd9 begins the MD5 of the empty string."""
    assert c.flags_hash("") == "d41d8cd9"
    facts = c.compiler_facts("neuron cache").set_index("fact").value
    assert facts["example cache entry"].split("/")[1].endswith("+" + c.flags_hash(""))


def test_compiler_facts_record_the_auto_cast_default_and_the_disagreement():
    f = c.compiler_facts("neuronx-cc")
    rows = f[f.fact == "--auto-cast default"]
    assert rows[rows.status == "used"].value.item() == "none"
    assert (rows.status == "alternative").sum() == 1  # the app note that still says matmult
    # the component release notes (2.30.0 listing) now give the overview's version number:
    # "Neuron Compiler [2.22.12471.0] (Neuron 2.27.0 Release)"
    versions = f[f.fact.str.startswith("release that changed the defaults")]
    assert set(versions.status) == {"used"}
    assert set(versions.value) == {"neuronx-cc 2.22.12471.0 (Neuron SDK 2.27.0)"}


def test_scratchpad_page_sizes_follow_the_runtime_2_33_page():
    """Neuron Device Memory (runtime 2.33 section): contiguous pages of 64 MB by default at
    LNC 2; 512 MB pages only in the non-contiguous mode."""
    f = c.compiler_facts("neuron runtime").set_index("fact")
    assert f.loc["shared scratchpad page size (contiguous mode)", "value"] == "64"
    assert f.loc["shared scratchpad page size (non-contiguous mode)", "value"] == "512"


# ----------------------------------------------------------------- pick_bucket

@given(n=st.integers(1, 5000), buckets=st.lists(st.integers(1, 5000), min_size=1, max_size=8))
def test_pick_bucket_is_the_smallest_that_fits(n, buckets):
    if n > max(buckets):
        with pytest.raises(ValueError, match="n_tokens"):
            c.pick_bucket(n, buckets)
        return
    b = c.pick_bucket(n, buckets)
    assert b in buckets and b >= n
    assert all(x < n or x >= b for x in buckets)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", None, float("nan"), 1e308, 10**30, True])
def test_pick_bucket_rejects_bad_n_tokens(bad):
    with pytest.raises(ValueError, match="n_tokens"):
        c.pick_bucket(bad, [128])


@pytest.mark.parametrize("bad", [[], "128", None, [0], [1.5], [float("nan")], [10**30], [[1, 2]],
                                 [None], [True], 128, {"a": 1}, [1e308]])
def test_bad_buckets_are_rejected(bad):
    with pytest.raises(ValueError, match="buckets"):
        c.pick_bucket(1, bad)


# -------------------------------------------------------------- padding, optimum

def brute_force_padded(lengths, k):
    values = sorted(set(lengths))
    best = None
    for r in range(min(k - 1, len(values) - 1) + 1):
        for combo in itertools.combinations(values[:-1], r):
            p = c.padded_tokens(lengths, [*combo, values[-1]])
            best = p if best is None else min(best, p)
    return best


small_lengths = st.lists(st.integers(1, 40), min_size=1, max_size=14)


@settings(max_examples=150)
@given(lengths=small_lengths, k=st.integers(1, 5))
def test_optimum_equals_brute_force_on_small_inputs(lengths, k):
    best = c.optimal_buckets(lengths, k)
    assert len(best) <= k and best[-1] == max(lengths)
    assert c.padded_tokens(lengths, best) == brute_force_padded(lengths, k)


@settings(max_examples=150)
@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=60), k=st.integers(1, 6),
       other=st.lists(st.integers(1, 600), min_size=0, max_size=6))
def test_optimum_is_no_worse_than_any_other_set(lengths, k, other):
    """Any set of at most k buckets that fits the data (its largest >= the longest
    length; buckets need not be data lengths) pads at least as much as the optimum."""
    candidate = sorted(set(other))[: k - 1] + [max(max(lengths), max(other, default=1))]
    candidate = sorted(set(candidate))[-k:]
    best = c.optimal_buckets(lengths, k)
    assert c.padded_tokens(lengths, best) <= c.padded_tokens(lengths, candidate)


@settings(max_examples=100)
@given(lengths=st.lists(st.integers(1, 1000), min_size=1, max_size=80), k=st.integers(1, 8))
def test_optimum_never_worse_than_one_bucket_and_monotone_in_k(lengths, k):
    one = c.padding_fraction(lengths, [max(lengths)])
    by_k = c.optimal_buckets_by_count(lengths, k)
    fracs = [c.padding_fraction(lengths, b) for b in by_k]
    assert fracs[0] == one
    assert all(f <= one for f in fracs)
    assert all(a >= b for a, b in zip(fracs, fracs[1:]))
    assert by_k[-1] == c.optimal_buckets(lengths, k)


@settings(max_examples=60)
@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=50), k=st.integers(1, 6))
def test_histogram_input_equals_raw_lengths(lengths, k):
    values, counts = np.unique(lengths, return_counts=True)
    assert c.optimal_buckets(values, k, counts=counts) == c.optimal_buckets(lengths, k)
    assert c.padding_fraction(values, [max(lengths)], counts=counts) == \
        c.padding_fraction(lengths, [max(lengths)])


def test_zero_padding_when_buckets_cover_every_distinct_length():
    assert c.optimal_buckets([3, 3, 9, 9, 17], 3) == (3, 9, 17)
    assert c.padding_fraction([3, 3, 9, 9, 17], (3, 9, 17)) == 0.0
    assert c.optimal_buckets([3, 3, 9, 9, 17], 10) == (3, 9, 17)


def test_optimal_beats_powers_of_two_on_the_wikipedia_histogram():
    h = c.length_histogram()
    for k in (2, 4, 8):
        opt = c.optimal_buckets(h.n_tokens, k, counts=h.n_sequences)
        p2 = c.power_of_two_buckets(512, k)
        assert c.padding_fraction(h.n_tokens, opt, counts=h.n_sequences) < \
            c.padding_fraction(h.n_tokens, p2, counts=h.n_sequences)


def test_a_million_lengths_with_8_buckets_is_fast_and_exact_in_structure():
    """The benchmark (tools/benchmarks/bench_compilation.py) times this; here only a loose
    bound that a shared 2-core machine always meets."""
    import time

    x = c.synthetic_lengths(1_000_000, max_tokens=8192, seed=3)
    start = time.perf_counter()
    best = c.optimal_buckets(x, 8)
    assert time.perf_counter() - start < 5.0
    assert len(best) == 8 and best[-1] == int(x.max())


@given(top=st.integers(1, 10**6), k=st.integers(1, 12))
def test_power_of_two_buckets(top, k):
    b = c.power_of_two_buckets(top, k)
    assert all(x & (x - 1) == 0 for x in b)
    assert top <= b[-1] < 2 * top
    assert len(b) == min(k, b[-1].bit_length())
    assert list(b) == sorted(b)


# ------------------------------------------------------------------ costs

def test_bucket_set_cost_identities():
    lengths = c.synthetic_lengths(5000, seed=2)
    b = c.optimal_buckets(lengths, 4)
    cost = c.bucket_set_cost(lengths, b, compile_s_per_neff=20 * minute, neff_bytes=0.25 * GiB,
                             scratchpad_bytes_per_token=1e5, tokens_per_s=1e5, n_epochs=3)
    assert cost.n_neffs == len(b) == 4
    assert cost.compile_s == 4 * 20 * minute
    assert cost.loaded_bytes == 4 * 0.25 * GiB + max(b) * 1e5
    assert cost.padded_tokens == c.padded_tokens(lengths, b)
    assert cost.real_tokens == int(lengths.sum())
    assert cost.padding_s == pytest.approx((cost.padded_tokens - cost.real_tokens) * 3 / 1e5)
    assert cost.total_s == pytest.approx(cost.padding_s + cost.compile_s)
    assert "assumption" in cost._repr_markdown_()


def test_tradeoff_table_optimal_never_worse_than_powers_of_two():
    lengths = c.synthetic_lengths(20_000, seed=1)
    df = c.bucket_tradeoff(lengths, 8, compile_s_per_neff=600, neff_bytes=1e8, tokens_per_s=1e5)
    piv = df.pivot(index="n_buckets", columns="strategy", values="padding_fraction")
    assert (piv["optimal"] <= piv["powers of two"] + 1e-15).all()
    opt = df[df.strategy == "optimal"]
    assert (opt.compile_s == opt.n_neffs * 600).all()
    assert opt.padding_fraction.is_monotonic_decreasing


@pytest.mark.parametrize("kw, name", [
    ({"compile_s_per_neff": -1}, "compile_s_per_neff"),
    ({"compile_s_per_neff": float("nan")}, "compile_s_per_neff"),
    ({"compile_s_per_neff": "10"}, "compile_s_per_neff"),
    ({"neff_bytes": None}, "neff_bytes"),
    ({"neff_bytes": 1e308}, "neff_bytes"),
    ({"tokens_per_s": 0}, "tokens_per_s"),
    ({"n_epochs": 0}, "n_epochs"),
    ({"scratchpad_bytes_per_token": -5}, "scratchpad_bytes_per_token"),
])
def test_bucket_set_cost_bad_input(kw, name):
    args = {"compile_s_per_neff": 60.0, "neff_bytes": 1e6, **kw}
    with pytest.raises(ValueError, match=name):
        c.bucket_set_cost([1, 2, 3], [3], **args)


@pytest.mark.parametrize("bad", [None, "abc", [], [0, 3], [1.5], [float("nan")], [10**30],
                                 [[1, 2]], 5, [None, 1], [1e308]])
def test_lengths_bad_input(bad):
    with pytest.raises(ValueError, match="lengths"):
        c.padding_fraction(bad, [8])
    with pytest.raises(ValueError, match="lengths"):
        c.optimal_buckets(bad, 2)


def test_lengths_longer_than_every_bucket():
    with pytest.raises(ValueError, match="largest bucket"):
        c.padding_fraction([10, 200], [128])


@pytest.mark.parametrize("bad", [0, -3, 1.5, "2", None, 10**30, float("inf")])
def test_n_buckets_bad_input(bad):
    with pytest.raises(ValueError, match="n_buckets"):
        c.optimal_buckets([1, 2, 3], bad)


def test_counts_bad_input():
    with pytest.raises(ValueError, match="counts"):
        c.optimal_buckets([1, 2], 1, counts=[1])
    with pytest.raises(ValueError, match="counts"):
        c.optimal_buckets([1, 2], 1, counts=[0, 0])
    with pytest.raises(ValueError, match="counts"):
        c.optimal_buckets([1, 2], 1, counts=[-1, 2])


@pytest.mark.parametrize("kw, name", [({"n_samples": 0}, "n_samples"), ({"sigma": 0}, "sigma"),
                                      ({"median_tokens": float("nan")}, "median_tokens"),
                                      ({"max_tokens": "8"}, "max_tokens"), ({"seed": -1}, "seed")])
def test_synthetic_lengths_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        c.synthetic_lengths(**{"n_samples": 10, **kw})


def test_synthetic_lengths_is_seeded_and_bounded():
    a, b = c.synthetic_lengths(1000, seed=5), c.synthetic_lengths(1000, seed=5)
    assert (a == b).all() and a.min() >= 1 and a.max() <= 2048
    assert not (a == c.synthetic_lengths(1000, seed=6)).all()


def test_length_histogram_bad_name():
    with pytest.raises(ValueError, match="name"):
        c.length_histogram("c4")


# ------------------------------------------------------------------- cache keys

def test_cache_key_parts_change_with_what_they_hash():
    g, env = c.GraphSpec(32, 512), c.CompileEnv(lnc=2)
    base = c.cache_key(g, env)
    assert base.startswith("neuronxcc-2.22/MODULE_")
    assert c.cache_key(c.GraphSpec(32, 512), c.CompileEnv(lnc=2)) == base  # deterministic
    other_graph = c.cache_key(c.GraphSpec(8, 512), env)
    assert other_graph.split("+")[1] == base.split("+")[1] and other_graph != base
    lnc1 = c.cache_key(g, c.CompileEnv(lnc=1))
    assert lnc1.split("+")[0] == base.split("+")[0] and lnc1 != base
    new_sdk = c.cache_key(g, c.CompileEnv(compiler_version="2.24", lnc=2))
    assert new_sdk.split("/")[1] == base.split("/")[1] and new_sdk != base


def test_cache_key_changes_table():
    df = c.cache_key_changes()
    assert not df.recompile.iloc[0] and df.recompile.iloc[1:].all()
    by = df.set_index("change")
    assert by.loc["LNC 2 → 1 (passed as --lnc)", "flags_changed"]
    assert not by.loc["LNC 2 → 1 (passed as --lnc)", "graph_changed"]
    assert by.loc["Neuron SDK upgrade (compiler 2.22 → 2.24)", "version_changed"]
    assert by.loc["last batch of the epoch is smaller (batch 32 → 8)", "graph_changed"]


@pytest.mark.parametrize("call, name", [
    (lambda: c.GraphSpec(0, 5), "batch_size"), (lambda: c.GraphSpec(2, "5"), "seq_len"),
    (lambda: c.GraphSpec(2, 5, variant=None), "variant"), (lambda: c.CompileEnv(lnc=3), "lnc"),
    (lambda: c.CompileEnv(flags=None), "flags"), (lambda: c.CompileEnv(compiler_version=""), "compiler_version"),
    (lambda: c.graph_hash("g"), "graph"), (lambda: c.flags_hash(None), "flags"),
    (lambda: c.cache_key(c.GraphSpec(1, 1), "env"), "env"),
])
def test_cache_key_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ------------------------------------------------------------------- the run

def test_step_stream_ragged_last_batch_and_drop_last():
    s = c.step_stream(1000, 64, pad_to=256, n_epochs=2)
    per_epoch = s[s.epoch == 0]
    assert len(per_epoch) == 16 and per_epoch.batch_size.iloc[-1] == 1000 - 15 * 64
    assert len(c.step_stream(1000, 64, pad_to=256, drop_last=True)) == 15
    assert set(c.step_stream(1000, 64, pad_to=256, drop_last=True).batch_size) == {64}


def test_step_stream_buckets_and_dynamic_lengths():
    lengths = c.synthetic_lengths(2000, seed=4)
    b = c.optimal_buckets(lengths, 4)
    s = c.step_stream(2000, 32, lengths=lengths, buckets=b, drop_last=True)
    assert set(s.seq_len) <= set(b)
    dyn = c.step_stream(2000, 32, lengths=lengths, drop_last=True)
    assert dyn.seq_len.nunique() > 10  # every batch's longest sample is its own shape


def test_group_by_length_gives_every_bucket_its_batches():
    lengths = c.synthetic_lengths(20_000, seed=0)
    b = c.optimal_buckets(lengths, 4)
    random = c.step_stream(20_000, 64, lengths=lengths, buckets=b)
    # random batches are padded to their longest sample: almost all land in the top bucket
    assert (random.seq_len == max(b)).mean() > 0.9
    grouped = c.step_stream(20_000, 64, lengths=lengths, buckets=b, group_by_length=True)
    assert set(grouped.seq_len) == set(b)
    assert int(grouped.batch_size.sum()) == 20_000
    per_bucket = grouped.groupby("seq_len").batch_size.apply(lambda x: int((x < 64).sum()))
    assert (per_bucket <= 1).all()  # at most one ragged batch per bucket
    dropped = c.step_stream(20_000, 64, lengths=lengths, buckets=b, group_by_length=True,
                            drop_last=True)
    assert set(dropped.batch_size) == {64}
    with pytest.raises(ValueError, match="group_by_length"):
        c.step_stream(100, 8, pad_to=8, group_by_length=True)


def test_step_stream_branch_rows():
    s = c.step_stream(640, 64, pad_to=128, branch_every=4)
    branched = s[s.variant != "train step"]
    assert branched.step.tolist() == [3, 7]
    assert set(branched.ranks) == {"rank 0"}
    assert set(s[s.step == 3].ranks) == {"rank 0", "other ranks"}


def test_run_compiles_cold_warm_and_node_counts():
    s = c.step_stream(1000, 64, pad_to=512, n_epochs=3)
    cold = c.run_compiles(s, compile_s=600, n_nodes=8)
    assert cold.n_graphs == 2  # full batches and the ragged last batch
    assert cold.n_compiles == 16 and cold.node_compile_s == 16 * 600
    assert cold.stall_s == 2 * 600
    assert cold.events.step.tolist() == [0, 15]
    warm_shared = c.run_compiles(s, compile_s=600, n_nodes=8, shared_cache=True,
                                 warm_keys=cold.cache_keys)
    assert warm_shared.n_compiles == 0 and warm_shared.stall_s == 0
    # local caches: 2 of 8 nodes were replaced after a failure and start empty
    local = c.run_compiles(s, compile_s=600, n_nodes=8, warm_keys=cold.cache_keys,
                           n_fresh_nodes=2)
    assert local.n_compiles == 4 and local.stall_s == 2 * 600
    # a new SDK (or flags, or LNC) misses the whole cache
    upgraded = c.run_compiles(s, compile_s=600, n_nodes=8, shared_cache=True,
                              warm_keys=cold.cache_keys, env=c.CompileEnv(compiler_version="2.24"))
    assert upgraded.n_compiles == cold.n_compiles


def test_trial_run_misses_the_last_batch_and_a_late_branch():
    s = c.step_stream(1000, 64, pad_to=512, branch_every=100, n_epochs=10)
    trial = c.trial_run_keys(s, 12)
    assert len(trial) == 1
    run = c.run_compiles(s, compile_s=600, n_nodes=4, shared_cache=True, warm_keys=trial)
    assert run.n_graphs == 3
    assert run.events[run.events.event == "compile"].step.tolist() == [15, 99]
    branch = run.events[run.events.ranks == "rank 0"]
    assert branch.nodes_compiling.tolist() == [1]


def test_parallel_precompile():
    assert c.parallel_precompile_s(10, 600, 4) == 1800
    assert c.parallel_precompile_s(0, 600, 4) == 0
    with pytest.raises(ValueError, match="n_workers"):
        c.parallel_precompile_s(10, 600, 0)


@pytest.mark.parametrize("call, name", [
    (lambda: c.step_stream(0, 8, pad_to=8), "n_samples"),
    (lambda: c.step_stream(10, None, pad_to=8), "batch_size"),
    (lambda: c.step_stream(10, 4), "pad_to"),
    (lambda: c.step_stream(10, 4, pad_to=8, lengths=[9] * 10), "pad_to"),
    (lambda: c.step_stream(10, 4, lengths=[1] * 9), "lengths"),
    (lambda: c.step_stream(10, 4, pad_to=8, branch_ranks="rank 3"), "branch_ranks"),
    (lambda: c.step_stream(10, 4, pad_to=8, drop_last="yes"), "drop_last"),
    (lambda: c.step_stream(3, 4, pad_to=8, drop_last=True), "drop_last"),
    (lambda: c.step_stream(10, 4, lengths=[9] * 10, buckets=[8]), "buckets"),
    (lambda: c.run_compiles("s", compile_s=1), "stream"),
    (lambda: c.run_compiles(c.step_stream(4, 2, pad_to=2), compile_s=-1), "compile_s"),
    (lambda: c.run_compiles(c.step_stream(4, 2, pad_to=2), compile_s=1, n_nodes=0), "n_nodes"),
    (lambda: c.run_compiles(c.step_stream(4, 2, pad_to=2), compile_s=1, warm_keys="k"), "warm_keys"),
    (lambda: c.run_compiles(c.step_stream(4, 2, pad_to=2), compile_s=1, n_fresh_nodes=5), "n_fresh_nodes"),
    (lambda: c.trial_run_keys(c.step_stream(4, 2, pad_to=2), -1), "n_steps"),
    (lambda: c.compiler_facts("gpu"), "topic"),
    (lambda: c.bucket_tradeoff([1, 2], 0, compile_s_per_neff=1, neff_bytes=1), "max_buckets"),
    (lambda: c.optimal_buckets_by_count([1, 2], 10**30), "max_buckets"),
    (lambda: c.power_of_two_buckets(float("nan"), 2), "max_tokens"),
])
def test_run_model_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_result_reprs():
    s = c.step_stream(100, 32, pad_to=64)
    r = c.run_compiles(s, compile_s=60)
    assert "distinct graphs" in r._repr_markdown_()
    assert isinstance(r.events, pd.DataFrame) and math.isfinite(r.stall_s)


# -------------------------------------------------- more properties, and a fuzz

@settings(max_examples=100)
@given(lengths=st.lists(st.integers(1, 500), min_size=1, max_size=40),
       extra=st.integers(1, 500))
def test_padding_fraction_matches_its_definition_and_falls_when_a_bucket_is_added(lengths, extra):
    top = max(lengths)
    one = c.padding_fraction(lengths, [top])
    by_hand = sum(top - n for n in lengths) / (top * len(lengths))
    assert one == pytest.approx(by_hand, rel=1e-12) and 0 <= one < 1
    assert c.padding_fraction(lengths, [min(extra, top), top]) <= one


@settings(max_examples=60)
@given(k=st.integers(1, 6), minutes=st.floats(0, 600), mib=st.floats(0, 4096))
def test_bucket_set_cost_is_linear_in_the_per_neff_assumptions(k, minutes, mib):
    lengths = list(range(1, 65))
    b = c.optimal_buckets(lengths, k)
    cost = c.bucket_set_cost(lengths, b, compile_s_per_neff=minutes * minute, neff_bytes=mib * 2**20)
    assert cost.compile_s == pytest.approx(len(b) * minutes * minute)
    assert cost.loaded_bytes == pytest.approx(len(b) * mib * 2**20)


VALID = {
    "lengths": [1, 2, 3], "buckets": [4], "counts": None, "n_tokens": 2, "n_buckets": 2,
    "max_buckets": 2, "max_tokens": 8, "compile_s_per_neff": 1.0, "neff_bytes": 1.0,
    "scratchpad_bytes_per_token": 0.0, "tokens_per_s": 1.0, "n_epochs": 1, "n_samples": 10,
    "median_tokens": 5.0, "sigma": 0.5, "seed": 0, "name": "wikipedia-bert-512", "n_bins": 4,
    "graph": c.GraphSpec(1, 1), "env": c.CompileEnv(), "flags": "", "batch_size": 2, "pad_to": 4,
    "drop_last": False, "group_by_length": False, "branch_every": 0, "branch_ranks": "rank 0",
    "branch_variant": "guard", "stream": c.step_stream(4, 2, pad_to=2), "compile_s": 1.0,
    "n_nodes": 1, "shared_cache": False, "warm_keys": (), "n_fresh_nodes": None, "n_steps": 1,
    "n_graphs": 1, "n_workers": 1, "topic": None,
}
BAD = [None, "x", float("nan"), float("inf"), 1e308, 10**30, -1, [1, "a"], {"a": 1}]


def _public_functions():
    import inspect

    return [(name, getattr(c, name)) for name in c.__all__
            if inspect.isfunction(getattr(c, name))]


@pytest.mark.parametrize("name, fn", _public_functions(), ids=[n for n, _ in _public_functions()])
def test_fuzz_every_public_function_raises_only_value_error(name, fn):
    import inspect

    params = [p for p in inspect.signature(fn).parameters.values()]
    base = {p.name: VALID[p.name] for p in params if p.name in VALID}
    if name == "step_stream":
        base["lengths"] = None  # every sample pad_to long
    missing = [p.name for p in params if p.name not in VALID and p.default is inspect.Parameter.empty]
    assert not missing, f"{name}: no valid value for {missing}"
    fn(**base)  # the valid call works
    for p in params:
        if p.name not in base:
            continue
        for bad in BAD:
            if bad is None and p.default is None:
                continue  # None is a valid choice there
            try:
                fn(**{**base, p.name: bad})
            except ValueError:
                pass
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{name}({p.name}={bad!r}) raised {type(exc).__name__}: {exc}")


def test_padding_against_compile_time_by_hand():
    """Chapter 07, worked problem 4 (and the 2026-12 audit's example): Wikipedia lengths,
    2 M real tokens/s, 20 min per NEFF, one epoch, one cold start: 54.8 / 53.8 / 86.1 / 162.9 min
    for 1 / 2 / 4 / 8 optimal buckets. By hand for one bucket: padding tokens = real tokens
    (50.0 % padding), so total = real / 2e6 s + 20 min."""
    from trainium_lab.units import minute

    wiki = c.length_histogram("wikipedia-bert-512")
    real = float((wiki.n_tokens * wiki.n_sequences).sum())
    t = c.bucket_tradeoff(wiki.n_tokens, 8, counts=wiki.n_sequences, compile_s_per_neff=20 * minute,
                          neff_bytes=0, tokens_per_s=2e6)
    opt = t[t.strategy == "optimal"].set_index("n_buckets")
    assert [round(opt.total_s[k] / minute, 1) for k in (1, 2, 4, 8)] == [54.8, 53.8, 86.1, 162.9]
    one = opt.loc[1]
    padded = real / (1 - one.padding_fraction)
    assert one.total_s == pytest.approx((padded - real) / 2e6 + 20 * minute)
    assert int(opt.total_s.idxmin()) == 2


def test_more_epochs_raise_the_optimum_and_cold_starts_lower_it():
    from trainium_lab.units import minute

    wiki = c.length_histogram("wikipedia-bert-512")

    def best(epochs, cold):
        t = c.bucket_tradeoff(wiki.n_tokens, 8, counts=wiki.n_sequences, compile_s_per_neff=20 * minute,
                              neff_bytes=0, tokens_per_s=2e6, n_epochs=epochs, n_cold_starts=cold)
        o = t[t.strategy == "optimal"].set_index("n_buckets")
        return int(o.total_s.idxmin())

    assert best(10, 1) > best(1, 1) > best(1, 5) == 1
    with pytest.raises(ValueError, match="n_cold_starts"):
        c.bucket_tradeoff(range(1, 9), 2, compile_s_per_neff=1, neff_bytes=0, n_cold_starts=-1)
    assert c.bucket_tradeoff(range(1, 9), 2, compile_s_per_neff=1, neff_bytes=0).total_s.isna().all()
