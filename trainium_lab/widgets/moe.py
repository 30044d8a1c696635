"""Chapter 10's widget: the router explorer (load imbalance against the capacity factor).

The callback only calls :func:`trainium_lab.moe.simulate_routing` and
:func:`trainium_lab.charts.moe.expert_load_chart`."""

from __future__ import annotations

import ipywidgets as W

from trainium_lab import moe
from trainium_lab.charts.moe import expert_load_chart
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["routing_explorer"]

_EXPERTS = [8, 16, 32, 64, 128]
_TOKENS = [1024, 2048, 4096]


def _route(n_experts: int, experts_per_token: int, capacity_factor: float, imbalance: float,
           n_tokens: int, seed: int) -> moe.RoutingResult:
    return moe.simulate_routing(n_tokens, n_experts, experts_per_token, capacity_factor, imbalance,
                                seed=seed)


def _describe(r: moe.RoutingResult) -> str:
    closed = ("" if r.closed_form is None else
              f" The closed form expects <b>{r.closed_form:.2%}</b> (exact for a balanced router or top-1).")
    return (f"{r.n_tokens:,} tokens, each to {r.experts_per_token} of {r.n_experts} experts; capacity "
            f"<b>{r.capacity_tokens:,}</b> tokens per expert (factor {r.capacity_factor:g}). This draw drops "
            f"<b>{r.dropped_fraction:.2%}</b> of the token-expert assignments; the busiest expert gets "
            f"<b>{r.max_over_mean:.2f}×</b> the mean load.{closed}")


@benchmarked(("capacity_factor", 1.0), ("imbalance", 2.0), ("n_experts", 128), ("experts_per_token", 8),
             ("seed", 1))
def routing_explorer(n_experts: int = 8, experts_per_token: int = 2, capacity_factor: float = 1.25,
                     imbalance: float = 1.0, n_tokens: int = 4096) -> Explorer:
    """Route a batch through a seeded, skewed router and see which tokens overflow the experts.

    Controls: experts, experts per token (top-k), capacity factor, router imbalance (hottest
    expert's share over the mean), tokens in the batch and the seed. The chart shows the
    tokens each expert receives against its capacity; the summary, the share dropped, with
    the closed form where one exists.
    """
    # labels get the width of the longest (widgets.base.control_grid): a fixed 150 px left the
    # sliders 54 px long, 21 steps of the seed in 54 px
    controls = {
        "n_experts": W.Dropdown(options=_EXPERTS, value=n_experts, description="experts"),
        "experts_per_token": W.IntSlider(value=experts_per_token, min=1, max=8, description="experts per token"),
        "capacity_factor": W.FloatSlider(value=capacity_factor, min=0.5, max=2.0, step=0.05,
                                         description="capacity factor"),
        "imbalance": W.FloatSlider(value=imbalance, min=1.0, max=4.0, step=0.1, description="router imbalance"),
        "n_tokens": W.Dropdown(options=_TOKENS, value=n_tokens, description="tokens"),
        "seed": W.IntSlider(value=0, min=0, max=20, description="seed"),
    }
    return Explorer(controls, _route, lambda r: expert_load_chart(r.table()), _describe, columns=2)
