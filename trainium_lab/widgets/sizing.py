"""Chapter 04's sizing calculator: model, tokens, system, recipe, ZeRO stage, MFU → plan."""

from __future__ import annotations

import html

import ipywidgets as W

from trainium_lab import sizing, specs
from trainium_lab._validate import positive
from trainium_lab.charts.sizing import plan_memory_chart
from trainium_lab.units import GiB, day, format_bytes, format_flops
from trainium_lab.widgets.base import Explorer, benchmarked, number

CUSTOM = "custom"


def _compute(model: str, n_params_billion: float, tokens_trillion: float, system: str,
             recipe: str, zero_stage: int, recompute: str, mfu_pct: float):
    if model == CUSTOM:
        n_params, shape = positive("n_params_billion", n_params_billion) * 1e9, None
    else:
        shape = sizing.preset(model)
        n_params = shape.n_params
    plan = sizing.size_job(n_params, tokens_trillion * 1e12, system=system, recipe_name=recipe,
                           zero_stage=zero_stage, mfu=mfu_pct / 100, model=shape, recompute=recompute)
    return plan, sizing.plan_memory_table(plan)


def _render(result):
    return plan_memory_chart(result[1])


def _describe(result) -> str:
    plan = result[0]
    sysm = specs.system(plan.system)
    one_system = sizing.training_time_s(plan.flops, plan.mfu, plan.system) / day
    if plan.min_chips is None:
        chips = (f"does <b>not fit</b> with ZeRO-{plan.zero_stage} at any data-parallel degree: "
                 "shard more (a higher stage) or add tensor/pipeline parallelism (chapter 05)")
    else:
        chips = (f"at least <b>{plan.min_chips}</b> chip{'s' if plan.min_chips != 1 else ''} "
                 f"→ <b>{plan.min_systems}</b> × {html.escape(sysm.name)}")
    act = ""
    if plan.activation_bytes_per_chip is not None:
        act = (f"<br>Activations for one micro-batch, no tensor parallelism: "
               f"<b>{format_bytes(plan.activation_bytes_per_chip)}</b> per chip "
               f"(the reserve is {plan.activation_share * sysm.chip.hbm_bytes / GiB:.1f} GiB).")
    return (f"State: <b>{format_bytes(plan.state_bytes)}</b> "
            f"({sizing.RECIPES[plan.recipe].bytes_per_param:g} bytes/param, "
            f"{html.escape(sizing.RECIPES[plan.recipe].label)}); {chips}.{act}"
            f"<br>Compute: <b>{format_flops(plan.flops)}</b> = <b>{plan.instance_days:,.0f}</b> "
            f"instance-days at {plan.mfu:.0%} MFU: {one_system:,.1f} days on one "
            f"{html.escape(sysm.name)} ({sysm.n_instances} instance{'s' if sysm.n_instances != 1 else ''}), "
            f"{plan.days_on(16):,.1f} days on 16 instances."
            "<br><i>MFU is the least certain number here: measure yours on a short run.</i>")


@benchmarked(("model", "llama3-405b"), ("system", "trn2-ultraserver"), ("zero_stage", 1), ("mfu_pct", 30.0))
def sizing_calculator(model: str = "llama3-8b", tokens_trillion: float = 1.0) -> Explorer:
    """The chapter's calculator: dropdowns and boxes in, a plan and one chip's HBM out."""
    controls = {
        "model": W.Dropdown(options=[(p.name, p.key) for p in sizing.presets()]
                            + [("custom (set size below)", CUSTOM)],
                            value=model, description="model"),
        "n_params_billion": number("custom (B)", 8.0, minimum=0, exclusive_minimum=True,
                                   tooltip="custom (B): model size in billions of parameters, for "
                                           "model = custom"),
        "tokens_trillion": number("tokens (T)", tokens_trillion, minimum=0, exclusive_minimum=True,
                                  tooltip="tokens (T): training tokens, trillions"),
        "system": W.Dropdown(options=[(s.name, s.key) for s in specs.systems()],
                             value="trn2.48xlarge", description="system"),
        "recipe": W.Dropdown(options=[(r.label, r.key) for r in sizing.RECIPES.values()],
                             value="bf16-adam", description="precision"),
        "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=3, description="ZeRO stage"),
        "recompute": W.Dropdown(options=list(sizing.RECOMPUTE_MODES), value="selective",
                                description="recompute"),
        "mfu_pct": number("MFU %", round(100 * sizing.default_mfu(), 1), minimum=0, maximum=100,
                          exclusive_minimum=True,
                          tooltip="model FLOPs utilisation, % (the course writes MFU in percent)"),
    }
    return Explorer(controls, _compute, _render, _describe, relevance=_relevance)


def _relevance(values: dict) -> dict[str, str]:
    if values["model"] != CUSTOM:
        return {"n_params_billion": "a preset model sets its own size (choose “custom” to use it)"}
    # a custom size has no layer shape, so no activation estimate for recompute to change
    return {"recompute": "a custom size has no layers to recompute: choose a preset model for the "
                         "activation estimate"}
