"""A system or chip name is resolved once, at the API's edge (issue 39, point 8; STYLE.md).

``specs.resolve_system`` / ``specs.resolve_chip`` are the one resolver: a record passes through, a
name goes to ``specs.lookup``. These tests count the calls of ``specs.lookup`` while one plan is
made, with the caches that would hide a repeated lookup cleared first.
"""

from __future__ import annotations

import collections

import pytest

from trainium_lab import collectives, layouts, planning, specs, topology
from trainium_lab.units import day


@pytest.fixture
def lookups(monkeypatch):
    """Count ``specs.lookup`` by kind; clear the caches keyed on a system first."""
    counts: collections.Counter = collections.Counter()
    real = specs.lookup

    def counting(kind, name, table, aliases=None):
        counts[kind] += 1
        return real(kind, name, table, aliases)

    planning._search.cache_clear()
    layouts._comm.cache_clear()
    topology._spans.cache_clear()
    topology._levels.cache_clear()
    monkeypatch.setattr(specs, "lookup", counting)
    return counts


# fixed count, fewest that fit, a deadline (the search over counts), two systems and a framework
CASES = [
    dict(model="llama3-8b", n_tokens=1e11, system="trn2.48xlarge", n_systems=1, usd_per_hour=40.0),
    dict(model="llama3-70b", n_tokens=2e12, system="trn2-ultraserver", usd_per_hour=40.0),
    dict(model="llama3-70b", n_tokens=2e12, system="trn2-ultraserver", deadline_s=60 * day, usd_per_hour=40.0),
    dict(model="llama3-8b", n_tokens=1e11, system="trn1.32xlarge", n_systems=2, usd_per_hour=21.5,
         framework="nxd"),
    dict(model="mixtral-8x7b", n_tokens=1e11, system="Trn2 UltraServer", n_systems=1, usd_per_hour=40.0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['model']}-{c['system']}")
def test_plan_run_resolves_the_system_once(lookups, case):
    kw = dict(case)
    planning.plan_run(kw.pop("model"), kw.pop("n_tokens"), **kw)
    assert lookups["system"] == 1, dict(lookups)
    assert lookups["chip"] == 0, dict(lookups)


def test_default_plan_resolves_the_system_once(lookups):
    # the case: every default, no price given (the placeholder price reads the platform
    # table, built once per process for every system: built here before counting)
    planning.platforms()
    lookups.clear()
    planning.plan_run("llama3-405b", 15e12, deadline_s=90 * day)
    assert lookups["system"] == 1, dict(lookups)


def test_the_counter_sees_a_repeated_lookup(lookups):
    # the counter is live: a name handed inward is looked up again
    c = topology.cluster("trn2-ultraserver", 2, 2)
    layouts._comm(c.system, c.n_systems, c.lnc, 64, 1, 2)
    assert lookups["system"] == 2


def test_resolver_passes_a_record_through():
    s = specs.system("trn2-ultraserver")
    assert specs.resolve_system(s) is s and specs.resolve_system("TRN2-UltraServer") is s
    ch = specs.chip("trn2")
    assert specs.resolve_chip(ch) is ch and s.chip is ch
    with pytest.raises(ValueError, match="system must be one of"):
        specs.resolve_system("trn9")
    with pytest.raises(ValueError, match="chip must be one of"):
        specs.resolve_chip(None)


def test_a_name_and_its_record_give_the_same_results():
    s = specs.system("trn2-ultraserver")
    assert topology.cluster(s, 2, 2) == topology.cluster("trn2-ultraserver", 2, 2)
    assert topology.cluster(s, 2, 2).system_spec is s
    a = layouts.plan("llama3-70b", system="trn2-ultraserver", n_systems=1, lnc=2, global_batch=256)
    b = layouts.plan("llama3-70b", system=s, n_systems=1, lnc=2, global_batch=256)
    assert a.table.equals(b.table)
    x = collectives.neuron_collective("all_reduce", 2**30, n_ranks=128, system="trn2-ultraserver", n_systems=2)
    y = collectives.neuron_collective("all_reduce", 2**30, n_ranks=128, system=s, n_systems=2)
    assert x == y
    with pytest.raises(ValueError, match="system must be a system name"):
        collectives.neuron_collective("all_reduce", 1024, n_ranks=2, system=3)


def test_a_decode_step_resolves_its_chip_once(lookups):
    # STYLE.md's example: reality.decode looked its chip up in specs four times and in
    # cores.resolve_lnc four more; the record now travels with the Replica (serving.Replica.chip_spec)
    from trainium_lab import reality, serving

    reality.decode("llama3-8b", "trn2", tp=8, batch=1, context_len=128)   # the calibration, fitted once
    serving._replica.cache_clear()
    lookups.clear()
    reality.decode("llama3-70b", "trn2", tp=32, batch=4, context_len=2048)
    assert lookups["chip"] == 1, dict(lookups)
    lookups.clear()
    rep = serving.replica("llama3-70b", "trn2", tp=64)
    serving.decode_step(rep, 1, 4096)
    assert lookups["chip"] == 1, dict(lookups)
