"""Bad input gets a clear answer: every public function of every model module, called with one
argument at a time replaced by a bad value, either works or raises ``ValueError`` — never an
``OverflowError``, ``TypeError``, ``AttributeError``, ``KeyError`` or anything else.

The functions are found by walking the package (``__all__`` of each model module), so a new
chapter's module is covered as soon as it exists. Each function is first called with a valid
baseline built from the course's vocabulary (``VALUES`` by parameter name, ``OVERRIDES`` per
function); the baseline must work, so that the bad value is what the function sees first.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import pytest

import trainium_lab

NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "diagrams", "__main__",
              "jaxdemo", "compile_demo"}

#: a valid value for each parameter name of the course's vocabulary
VALUES = {
    # sizes and rates
    "size_bytes": 1e9, "n_bytes": 1e9, "state_bytes": 1e12, "bandwidth_bytes_per_s": 1e11,
    "bytes_per_s": 1e11, "latency_s": 1e-5, "time_s": 0.01, "flops": 1e21,
    "n_params": 8e9, "n_tokens": 1e12, "tokens_per_s": 1e5, "bytes_per_param": 16.0,
    "optimizer_bytes_per_param": 12.0, "weight_bytes_per_param": 2.0, "grad_bytes_per_param": 2.0,
    "mfu": 0.4, "activation_share": 0.35, "flop_per_s": 1e15, "seconds": 3.0,
    # counts and degrees
    "n": 16, "step": 1, "tp": 4, "pp": 2, "dp": 2, "ep": 1, "stage": 1, "zero_stage": 1,
    "n_chips": 64, "n_units": 16, "n_systems": 1, "n_instances": 4, "n_prefixes": 4, "n_ranks": 64,
    "micro_batch": 1, "n_micro_batches": 8, "global_batch": 64, "seq_len": 4096,
    "d_model": 4096, "n_heads": 32, "n_kv_heads": 8, "n_layers": 32, "ffn_dim": 14336,
    "vocab_size": 128256, "m": 1024, "k": 1024, "n_points": 4, "n_draws": 50,
    "n_steps": 20, "n_weights": 100, "n_features": 4, "n_samples": 32, "record_every": 1,
    "n_runs": 200, "max_domains": 8, "max_chips": 10_000, "chip_index": 0, "digits": 2,
    "margin": 0, "seed": 0, "lnc": 2, "other": 128, "counts": (1, 2),
    # times
    "checkpoint_s": 300.0, "mtbf_s": 86400.0, "unit_mtbf_s": 1e6, "chip_mtbf_s": 1e7,
    "instance_mtbf_s": 1e6, "domain_mtbf_s": 1e5, "restart_s": 600.0, "interval_s": 3600.0,
    "write_s": 60.0, "snapshot_s": 5.0, "work_s": 86400.0,
    # numerics
    "value": 1.5, "x": 1.5, "update": 1e-3, "w0": 1.0, "learning_rate": 0.01, "noise": 0.5,
    "amax": 100.0, "scale": 1.0, "center": 1e-4, "spread": 2.0, "low": 0.1, "high": 1e4,
    "rel_tol": 0.02, "claimed": 96.0, "dp_overlap": 1.0, "min_headroom_fraction": 0.1,
    # names
    "chip": "trn2", "system": "trn2-ultraserver", "system_name": "trn2.48xlarge",
    "dtype": "bfloat16", "collective": "all_reduce", "mode": "nearest", "optimizer": "adam",
    "recompute": "selective", "recipe_name": "bf16-adam", "model": "llama3-8b",
    "name": "trn2", "kind": "tp", "failed": "chip", "replacement": "system", "query": "",
    "ordering": "tp-pp-dp", "entity": "trn2", "field": "hbm_bytes", "field_name": "hbm_bytes",
    "unit": "GiB", "phrase": "HBM", "claim": None, "claim_id": None, "filename": "chips.csv",
    "sizes_bytes": (1e6, 1e9), "dims": (128, 256), "intervals_s": (1800.0, 3600.0),
    "dp_values": (1, 8), "seq_lens": (2048, 4096), "stages": (0, 3),
    # serving (chapter 09)
    "head_dim": 128, "alpha": 0.8, "context_len": 4096, "batch": 8, "prompt_tokens": 512,
    "output_tokens": 128, "concurrency": 8, "kv_bytes_per_token": 131072.0,
    "context_lens": (1024, 4096), "batches": (1, 8), "concurrencies": (1, 8), "max_len": 4096,
    "buckets": (128, 256, 512), "lengths": (100, 200), "n_buckets": (1, 4), "neff_bytes": 1e8,
    "num_cores": 32, "max_model_len": 16384, "quantity": "auto_bucket_min_tokens", "c": 0.05,
    "bytes_moved": 1e9, "peak_flops_per_s": 1e15, "hbm_bytes_per_s": 1e12,
    "rep": "REPLICA", "target": "REPLICA", "draft": "REPLICA",
    # compilation (chapter 07)
    "max_buckets": 4, "max_tokens": 2048, "compile_s_per_neff": 300.0, "graph": "GRAPH",
    "flags": "--auto-cast=none", "batch_size": 32, "stream": "STREAM", "compile_s": 300.0,
    "n_graphs": 8, "n_workers": 4, "n_samples": 100,
    # mixture of experts and interleaved pipelines (chapter 10)
    "n_experts": 8, "experts_per_token": 2, "expert_ffn_dim": 14336, "virtual_stages": 2,
    # planning (chapter 11)
    "target_tokens_per_s": 20_000.0, "mfu_subject": 0.4, "mfu_baseline": 0.4, "plan": "RUN_PLAN",
    # checkpoints, automatic resume and traces (chapter 06, issue 15)
    "storage_bytes": 5e13, "mb_per_s_per_tib": 500.0, "turnaround_s": 7200.0, "n_spares": 2,
    "policy": "auto-resume + spares", "manual_detect_s": 3600.0, "auto_detect_s": 60.0,
    "swap_s": 300.0, "provision_s": 1200.0, "health_check_s": 7200.0, "load_s": 60.0,
    "step_s": 10.0, "comm_s": 2.0, "cause": "device error", "at_step": 2, "rank": 1,
    "timeout_s": 60.0, "slow_factor": 1.5, "checkpoint_every": 2, "fail_at_s": (42.0,),
    "compile_at_steps": (1,), "detect_s": 3.0, "replace_s": 0.0, "restart_compile_s": 0.0,
    # parallelism (chapter 05)
    "tp_chips": 4, "schedule": "1f1b",
    # training frameworks (issue 26)
    "fw": "nxd", "framework": "nxd", "parameter": "dp_overlap", "master_weights": None,
    "lay": "LAYOUT", "checkpoint_bytes": 7e11, "read_bytes_per_s": 1e10, "chips_per_replica": 32, "dp_bytes_per_s": 2.5e10,
    "op": "softmax", "n_elements": 1e6, "tensor_flops": 1e12, "vector_flops": 1e9, "scalar_flops": 1e9,
    "hbm_bytes": 1e9, "link_bytes_per_s": 2.5e10,
}

#: per-function baselines where the vocabulary's value does not fit
OVERRIDES = {
    "collectives.hierarchical_allreduce_s": {"levels": [(4, 1e11), (4, 1e10, 1e-5)]},
    "collectives.group_collective_s": {"placement": "PLACEMENT", "kind": "tp"},
    "collectives.placement_costs": {"placement": "PLACEMENT", "size_bytes": 1e8},
    "collectives.torus_group_links": {"n_chips": 4, "grid_side": 4},
    "collectives.torus_group_bytes_per_s": {"n_chips": 4, "system": "trn2-ultraserver"},
    "collectives.torus_average_hops": {"n_chips": 4, "grid_side": 4},
    "collectives.torus_2d_allreduce_s": {"x": 4, "y": 4},
    # the claim checks live in their own module (issue 13; the cores re-export went in issue 26)
    "claim_checks.check_figure": {"entity": "trn2", "field": "hbm_bytes", "claimed": 96.0,
                                  "unit": "GiB"},
    "claim_checks.check_text": {"entity": "trn2", "field": "core_version",
                                "phrase": "NeuronCore-v3"},
    "claim_checks.claim": {"claim_id": "FIRST_CLAIM"},
    "claim_checks.check_claim": {"claim": "96 GiB of HBM per Trainium2 chip"},
    "frameworks.framework": {"name": "nxd"},
    "frameworks.resolve_framework": {"name": "nxd"},
    "sizing.recipe_split": {"name": "nxd-standard-mixed-precision"},
    "cores.core_counts": {"system": "trn2.48xlarge"},
    "cores.core_count_table": {"system": "trn2.48xlarge"},
    "layouts.layout": {"tp": 8, "pp": 4, "dp": 2, "system": "trn2.48xlarge"},
    "layouts.evaluate": {"lay": "LAYOUT"},
    "layouts.plan": {"model": "llama3-8b", "system": "trn2.48xlarge", "global_batch": 16,
                     "micro_batches": (1,), "zero_stages": (1,), "recompute": ("selective",)},
    "layouts.custom_model": {"name": "toy"},
    "numerics.round_to": {"x": [1.5, 2.5]},
    "numerics.ulp": {"x": 1.5},
    "numerics.quantization_error": {"x": [1.5, 2.5]},
    "numerics.repeated_updates": {"n_steps": 20, "n_weights": 100},
    "numerics.formats_table": {"dtypes": ("bfloat16", "float32")},
    "reliability.expected_segment_s": {"interval_s": 3600.0},
    "reliability.simulate_runs": {"n_runs": 200},
    "reliability.simulated_lost_fraction": {"n_runs": 200},
    "reliability.blast_radius": {"chip": 0},
    "reliability.layout_mtbf_s": {"chip_mtbf_s": 1e7},
    "sizing.plan_memory_table": {"job": "SIZING_PLAN"},
    "sizing.job_memory_table": {"job": "SIZING_PLAN"},
    "sizing.state_breakdown": {"recipes": "bf16-adam"},
    "specs.lookup": {"kind": "chip", "name": "trn2", "table": {"trn2": 1}},
    "specs.facts": {"kind": "chip", "entity": "trn2"},
    "specs.fact": {"entity": "trn2", "field_name": "hbm_bytes"},
    "specs.alternatives": {"entity": "trn2", "field_name": "hbm_bytes"},
    "specs.source": {"entity": "trn2", "field_name": "hbm_bytes"},
    "specs.core": {"name": "neuroncore-v3"},
    "specs.system": {"name": "trn2.48xlarge"},
    "specs.system_readings": {"name": "trn3-gen2-ultraserver"},
    "specs.link": {"name": "trn2-efa"},
    "specs.accelerator": {"name": "h100"},
    # issue 24: reality and the calibration table
    "specs.calibration": {"name": "train_mfu"},
    "reality.parameter": {"name": "train_mfu"},
    "reality.decode": {"model": "llama3-70b", "chip": "trn2", "tp": 64, "batch": 1, "context_len": 10000},
    "reality.prefill": {"model": "llama3-70b", "chip": "trn2", "tp": 64, "prompt_tokens": 1024},
    "reality.collective": {"op": "all_reduce", "size_bytes": 2**20, "n_ranks": 64, "system": "trn1.32xlarge",
                           "n_systems": 2},
    "collectives.neuron_collective": {"op": "all_reduce", "size_bytes": 2**20, "n_ranks": 64,
                                      "system": "trn1.32xlarge", "n_systems": 2},
    "reality.training": {"model": "llama3-8b", "system": "trn1.32xlarge", "n_systems": 32, "tp": 32, "pp": 1,
                         "dp": 32, "seq_len": 8192, "global_batch": 1024},
    "reality.acceptance": {"position": 1},
    # issue 38: the speculative TPOT and the out-of-sample range
    "reality.speculative_tpot": {"model": "llama3-70b", "chip": "trn2", "tp": 64, "batch": 1, "context_len": 10000,
                                 "k": 3},
    "reality.expected_range": {"set_name": "nxdi_trn2_tutorials"},
    "reality.auto_bucket_tokens": {"n_tokens": 300},
    "reality.implied_prefill_efficiency": {"measurement_id": "nxdi-llama33-70b-ttft"},
    "specs.links": {"system_name": "trn2.48xlarge"},
    "topology.cluster": {"system": "trn2.48xlarge"},
    "topology.place": {"tp": 8, "pp": 4, "dp": 2, "system": "trn2.48xlarge"},
    "topology.check_degrees": {"n_ranks": 16, "tp": 4, "pp": 2, "dp": 2},
    "topology.ranks_per_system": {"system": "trn2.48xlarge"},
    "roofline.utilisation_curve": {"dims": (128, 256)},
    "sizing.min_systems": {"system": "trn2.48xlarge"},
    "sizing.sharded_state_table": {"counts": (1, 2)},
    "sizing.training_time_s": {"system": "trn2.48xlarge"},
    "sizing.system_flops_per_s": {"system": "trn2.48xlarge"},
    "sizing.instance_days": {"system": "trn2.48xlarge"},
    "sizing.days_on_instances": {"system": "trn2.48xlarge"},
    "sizing.size_job": {"system": "trn2.48xlarge", "model": None},
    "sizing.recipe": {"name": "bf16-adam"},
    "sizing.preset": {"name": "llama3-8b"},
    "components.component": {"key": "nki"},
    "components.is_current": {"key": "nki"},
    "components.status_label": {"key": "nki"},
    "components.mentions": {"text": "NKI Library"},
    "moe.dispatch_exchange": {"component": "nxd-training"},
    "layouts.fully_sharded_table": {"counts": (1, 2)},
    "layouts.candidate_degrees": {"n_ranks": 16},
    "intro.weights_vs_hbm": {"chip": "trn2"},
    "intro.weights_fit": {"chip": "trn2"},
    "units.format_seconds": {"seconds": 3.0},
    "units.format_count": {"count": 70e9},
    "units.parse_bytes": {"text": "1GiB"},
    "units.parse_rate": {"text": "25GB/s"},
    "units.parse_seconds": {"text": "90s"},
    "units.parse_count": {"text": "70B"},
    "units.parse_fraction": {"text": "40%"},
    "units.parse_usd_per_hour": {"text": "40USD/h"},
    "units.field_unit": {"label": "chip MTBF (d)"},
    "units.parse_in_unit": {"text": "1e6"},
    "serving.pick_bucket": {"n_tokens": 100},
    "compilation.pick_bucket": {"n_tokens": 100},
    "kernels.pipeline_time_s": {"n_tiles": 8, "load_s": 1e-6, "compute_s": 2e-6, "store_s": 1e-6,
                                "buffers": 2},
    "kernels.matmul_hbm_bytes": {"m": 256, "n": 512, "k": 256, "tile_m": 128, "tile_n": 512},
    "kernels.tile_plan": {"m": 256, "n": 512, "k": 256, "tile_m": 128, "tile_n": 512},
    "kernels.tiled_matmul": {"a": [[1.0, 2.0], [3.0, 4.0]], "b": [[1.0], [2.0]]},
    "kernels.matmul_ladder": {"m": 2048, "n": 1024, "k": 1024},
    "kernels.systolic_matmul_cycles": {"moving_n": 64},
    "kernels.decode_matmul_orientations": {"tokens": 8, "d_in": 256, "d_out": 256},
    "kernels.attention_softmax": {"queries": [[1.0, 2.0]], "keys": [[1.0, 2.0], [0.5, 0.5]]},
    "compilation.optimal_buckets": {"n_buckets": 2},
    "compilation.power_of_two_buckets": {"n_buckets": 3},
    "compilation.synthetic_lengths": {"n_samples": 100},
    "compilation.step_stream": {"n_samples": 100, "batch_size": 32, "pad_to": 128},
    "serving.check_launch": {"model": "llama3-70b", "n_chips": 16, "tp": 8, "pp": 2},
    "serving.chip_decode_table": {"n_chips": 8, "batch": 8, "context_len": 1024},
    "serving.cost_table": {"model": "llama3-8b", "deployments": (("inf2.xlarge", 2),), "context_len": 1024},
    # issue 28: serving as NxD Inference and vLLM Neuron do it
    "serving.neff_memory_bytes": {"scratchpad_bytes": (1e8, 2e8), "other_bytes": (1e7, 1e7)},
    "serving.prefix_cache_ttft_ratio": {"hit_rate": 0.5, "fixed_fraction": 0.2},
    "serving.disaggregated_server_ratio": {"prefill_s_per_request": 0.5, "decode_step_s": 0.02,
                                           "output_tokens": 256},
    "serving.moe_decode_expert_bytes": {"model": "mixtral-8x7b"},
    "serving.kv_sharding_table": {"context_len": 4096},
    "serving.cost_per_million_tokens_usd": {"usd_per_hour": 40.0},
    "topology.group_spans": {"tp": 8, "pp": 4, "dp": 2, "system": "trn2.48xlarge"},
    "planning.bill": {"purchase_option": "capacity-block", "wall_s": 86400.0, "n_instances": 4},  # issue 25
    "moe.custom_moe_model": {"name": "toy"},
    "moe.expert_capacity_tokens": {"n_tokens": 4096},
    "moe.expected_dropped_fraction": {"n_tokens": 4096},
    "moe.simulate_routing": {"n_tokens": 4096},
    "moe.dispatch_bytes": {"n_tokens": 4096},
    "moe.all_to_all_table": {"model": "mixtral-8x7b"},
    # issue 28: expert parallelism as NxD runs it, dropless blocks, router balancing
    "moe.ep_exchange_table": {"model": "mixtral-8x7b"},
    "moe.blockwise_blocks": {"n_tokens": 4096},
    "moe.blockwise_compute_factor": {"n_tokens": 4096},
    "moe.load_balancing_loss": {"token_fractions": (0.5, 0.5), "router_probabilities": (0.5, 0.5)},
    "moe.router_z_loss": {"logits": [[0.0, 1.0]]},
    "moe.aux_free_bias_update": {"bias": (0.0, 0.0), "expert_loads": (3, 1)},
    "planning.price": {"instance": "p5.48xlarge"},
    "planning.plan_run": {"usd_per_hour": 40.0, "n_systems": 1},
    "planning.plan": {"job": __import__("trainium_lab.planning", fromlist=["Job"]).Job("llama3-8b", 1e11),
                      "cluster": __import__("trainium_lab.planning", fromlist=["ClusterSpec"]).ClusterSpec(
                          n_systems=1),
                      "cost": __import__("trainium_lab.planning", fromlist=["CostSpec"]).CostSpec(usd_per_hour=40.0)},
    "planning.plan_serving": {"usd_per_hour": 40.0},
    "planning.compare_platforms": {"mfu": {"trn2.48xlarge": 0.4, "p5.48xlarge": 0.4}},
    "planning.check_price_claim": {"claim_id": "trn2-price-performance"},
    "reliability.timeline_log": {"timeline": __import__(
        "trainium_lab.reliability", fromlist=["training_timeline"]).training_timeline(
        10.0, 6, checkpoint_every=2, checkpoint_s=5.0, fail_at_s=(42.0,), detect_s=3.0)},
}

#: one bad value of each kind the issue names
BAD = {"nan": math.nan, "minus_one": -1, "zero": 0, "huge_float": 1e308, "huge_int": 10**30,
       "string": "not-a-value", "none": None, "list": [1, 2]}


def _placeholder(value):
    """Objects a baseline needs that only the package can build."""
    from trainium_lab import claim_checks, cores, layouts, sizing, topology

    if not isinstance(value, str):
        return value
    if value == "GRAPH":
        from trainium_lab import compilation

        return compilation.GraphSpec(32, 512)
    if value == "STREAM":
        from trainium_lab import compilation

        return compilation.step_stream(100, 32, pad_to=128)
    if value == "REPLICA":
        from trainium_lab import serving

        return serving.replica("llama3-8b", tp=4)
    if value == "PLACEMENT":
        return topology.place(tp=8, pp=4, dp=2, system="trn2.48xlarge", lnc=2)
    if value == "LAYOUT":
        return layouts.layout("llama3-8b", tp=8, pp=4, dp=2, system="trn2.48xlarge", lnc=2)
    if value == "SIZING_PLAN":
        return sizing.size_job(8e9, 1e12, system="trn2.48xlarge")
    if value == "RUN_PLAN":
        from trainium_lab import planning

        return planning.plan_run("llama3-8b", 1e11, n_systems=1, usd_per_hour=40.0)
    if value == "FIRST_CLAIM":
        return claim_checks.claims()[0].claim_id
    return value


def _modules(info):
    """A model module, or each module of a model package (``layouts`` is split along its seams):
    a function is walked where it is defined, so a re-export is not walked twice."""
    module = importlib.import_module(f"trainium_lab.{info.name}")
    if not info.ispkg:
        return [module]
    return [module] + [importlib.import_module(f"{module.__name__}.{sub.name}")
                       for sub in pkgutil.iter_modules(module.__path__) if not sub.name.startswith("_")]


def public_functions():
    """Every public function, named by its public path (``layouts.plan``, not ``layouts.planner.plan``)."""
    out = []
    for info in pkgutil.iter_modules(trainium_lab.__path__):
        if info.name.startswith("_") or info.name in NOT_MODELS:
            continue
        for module in _modules(info):
            for name in getattr(module, "__all__", ()):
                obj = getattr(module, name)
                if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                    out.append((f"{info.name}.{name}", obj))
    return out


FUNCTIONS = public_functions()


def baseline(qualname, fn):
    kwargs = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        override = OVERRIDES.get(qualname, {})
        if p.name in override:
            kwargs[p.name] = _placeholder(override[p.name])
        elif p.default is not p.empty:
            continue
        elif p.name in VALUES:
            kwargs[p.name] = _placeholder(VALUES[p.name])
        else:
            raise AssertionError(f"{qualname}: no baseline value for {p.name!r}; add one to "
                                 "VALUES or OVERRIDES in tests/test_fuzz.py")
    return kwargs


def test_every_model_module_is_walked():
    modules = {q.split(".")[0] for q, _ in FUNCTIONS}
    assert {"collectives", "numerics", "sizing", "layouts", "reliability", "specs"} <= modules
    assert len(FUNCTIONS) > 100
    names = [q for q, _ in FUNCTIONS]
    assert len(names) == len(set(names)), "a function walked twice"


def test_a_model_package_re_exports_what_its_modules_make_public():
    """``layouts`` is a package: every public name of its modules is reachable as ``layouts.X``
    (the path notebooks use), and each public function is walked once, where it is defined."""
    from trainium_lab import layouts

    for sub in pkgutil.iter_modules(layouts.__path__):
        module = importlib.import_module(f"trainium_lab.layouts.{sub.name}")
        for name in getattr(module, "__all__", ()):
            assert name in layouts.__all__ and getattr(layouts, name) is getattr(module, name), name
    walked = {q for q, fn in FUNCTIONS if fn.__module__.startswith("trainium_lab.layouts")}
    assert walked == {f"layouts.{n}" for n in layouts.__all__
                      if inspect.isfunction(getattr(layouts, n))
                      and getattr(layouts, n).__module__.startswith("trainium_lab.layouts")}


@pytest.mark.parametrize("qualname,fn", FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_baseline_call_works(qualname, fn):
    fn(**baseline(qualname, fn))


@pytest.mark.parametrize("qualname,fn", FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_bad_input_raises_value_error_only(qualname, fn):
    base = baseline(qualname, fn)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    problems = []
    for p in params:
        for label, bad in BAD.items():
            kwargs = dict(base, **{p.name: bad})
            try:
                fn(**kwargs)
            except ValueError:
                pass
            except Exception as exc:  # anything else is the defect this test exists for
                problems.append(f"{p.name}={label}: {type(exc).__name__}: {str(exc)[:80]}")
    assert not problems, f"{qualname}:\n" + "\n".join(problems)
