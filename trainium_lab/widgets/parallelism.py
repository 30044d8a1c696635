"""Chapter 05's pipeline explorer: stages, micro-batches and schedule → the timeline and its bubble.

The callback calls :func:`trainium_lab.parallelism.pipeline_schedule` and draws
:func:`trainium_lab.charts.parallelism.pipeline_schedule_chart`; nothing else."""

from __future__ import annotations

import ipywidgets as W

from trainium_lab import layouts, parallelism
from trainium_lab.charts.parallelism import pipeline_schedule_chart
from trainium_lab.widgets.base import Explorer, benchmarked

__all__ = ["pipeline_explorer"]


def _compute(pp, n_micro_batches, schedule, backward_ratio):
    return parallelism.pipeline_schedule(pp, n_micro_batches, schedule=schedule, forward_s=1.0,
                                         backward_s=float(backward_ratio))


def _render(s: parallelism.PipelineSchedule):
    return pipeline_schedule_chart(s.ops, s.idle, title="Pipeline schedule: who works when")


def _describe(s: parallelism.PipelineSchedule) -> str:
    formula = layouts.pipeline_bubble_fraction(s.pp, s.n_micro_batches)
    other = "GPipe" if s.schedule == "1f1b" else "1F1B"
    other_peak = s.n_micro_batches if s.schedule == "1f1b" else min(s.pp, s.n_micro_batches)
    name = "1F1B" if s.schedule == "1f1b" else "GPipe"
    return (f"<b>{name}</b>, p = {s.pp} stages, m = {s.n_micro_batches} micro-batches: the step takes "
            f"<b>{s.makespan_s:.4g}</b> time units for <b>{s.busy_s:.4g}</b> of work per stage. "
            f"Bubble <b>{s.bubble_fraction:.3f}</b> of the busy time (formula (p − 1)/m = {formula:.3f}). "
            f"Stage 1 holds up to <b>{s.peak_in_flight}</b> micro-batches of activations "
            f"({other} would hold {other_peak}).")


@benchmarked(("n_micro_batches", 16), ("pp", 8), ("schedule", "gpipe"), ("backward_ratio", 1.0))
def pipeline_explorer(pp: int = 4, n_micro_batches: int = 8, schedule: str = "1f1b") -> Explorer:
    """Stages ``p``, micro-batches ``m``, schedule (1F1B or GPipe) and the backward/forward time
    ratio → the timeline of every pass, the bubble in grey, and the activations stage 1 keeps."""
    controls = {
        "pp": W.IntSlider(value=pp, min=1, max=16, description="stages p"),
        "n_micro_batches": W.IntSlider(value=n_micro_batches, min=1, max=32, description="micro-batches m"),
        "schedule": W.Dropdown(options=[("1F1B", "1f1b"), ("GPipe", "gpipe")], value=schedule,
                               description="schedule"),
        "backward_ratio": W.FloatSlider(value=2.0, min=0.5, max=3.0, step=0.5,
                                        description="backward / forward"),
    }
    return Explorer(controls, _compute, _render, _describe)
