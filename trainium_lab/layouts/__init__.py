"""Parallel layouts: memory per chip and a first-order step time, and a planner.

A *layout* splits a training job over ``tp × pp × dp`` ranks (tensor, pipeline and
data parallel), with a ZeRO stage, a micro-batch size, a number of micro-batches
and an activation-recomputation mode, on ``n_systems`` copies of a Trainium
system. This module turns a layout into

* **memory per chip**: weights and gradients split over ``tp·pp`` ranks, the
  optimizer state (FP32 master copy and Adam moments) also over ``dp`` under
  ZeRO-1, gradients under ZeRO-2 and weights under ZeRO-3, and the activations
  the first pipeline stage keeps under the 1F1B schedule; and the headroom left
  in HBM;
* **a first-order step time**: compute at an assumed utilisation, the tensor-
  parallel all-reduces of every layer at the level the TP group lands on, the
  pipeline bubble ``(p − 1)/m`` of 1F1B (``(p − 1)/(v·m)`` with ``v`` interleaved
  virtual stages), pipeline point-to-point sends, and the part of the data-parallel
  gradient traffic that the backward pass cannot hide;
* for **mixture-of-experts** models (:mod:`trainium_lab.moe`) a fourth degree,
  ``ep``: experts split over ``ep`` ranks placed right after TP (inside the fastest
  domain that holds ``tp·ep`` ranks), the dispatch and combine all-to-alls of every
  MoE layer, and memory and compute that follow total and active parameters;

and searches every valid layout of a cluster for the fastest one that fits
(:func:`plan`); :func:`trainium_lab.views.explain_plan` says what binds.

Degrees count **ranks** (logical NeuronCores), as in :mod:`trainium_lab.topology`:
at LNC=2 a Trainium2 chip runs 4 ranks, so "TP over the 16 chips of an instance"
is ``tp=64``. Memory is reported per **chip**: the sum over the chip's ranks.

Public API
----------
``layout(model, tp, pp, dp, ...) -> Layout``
    A validated layout (bad degrees raise ``ValueError`` naming the parameter).
``evaluate(layout, *, mfu=0.4, ...) -> LayoutEstimate``
    Memory per chip, headroom, step-time breakdown, tokens/s.
``plan(model, *, system, n_systems, global_batch, ...) -> Plan``
    Every valid layout, those that fit, ranked by tokens/s (``Plan.fitting(margin)`` for
    another margin); :func:`trainium_lab.views.explain_plan` puts the result into sentences.
``fully_sharded_table(...)``, ``worked_example()``
    A 405B worked example (TP over 16 chips × PP4 × DP2, ZeRO-1) from the same functions.
``custom_model(...)``
    A model configuration of your own (a :class:`trainium_lab.sizing.ModelPreset`).
``pipeline_bubble_fraction(pp, n_micro_batches, virtual_stages=1)``, ``tp_allreduces_per_layer(recompute)``,
``interleaved_activation_factor(pp, virtual_stages)``
    The formulas, on their own.

What the first-order model leaves out is listed in :data:`IGNORED`; the notebook
(chapter 05) discusses each item.

References
----------
M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models
Using Model Parallelism", arXiv:1909.08053 (2019), §3 (two all-reduces forward and
two backward per transformer layer). D. Narayanan et al., "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", SC21,
arXiv:2104.04473 (2021), §2.2 (1F1B schedule, bubble (p−1)/m), §3 (degree
choices), §4.1 (scatter/gather of pipeline sends). V. Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198 (2022), Table 2 and §4.2.3 (the first stage keeps p micro-batches
of activations) and §4.2.3's factor ``1 + (p − 1)/(p·v)`` for the interleaved schedule.
S. Rajbhandari et al., "ZeRO", arXiv:1910.02054 (2020), §5 and §7 (memory and
communication volume of each stage); "DeepSpeed-MoE", arXiv:2201.05596 (2022), §5
(expert and expert-data parallelism). D. Lepikhin et al., "GShard", arXiv:2006.16668
(2020) (dispatch and combine all-to-alls). Llama Team, "The Llama 3
Herd of Models", arXiv:2407.21783 (2024), §3.3.2 (uneven pipeline stages).

Examples
--------
A layout for 405B on two Trn2 UltraServers: TP over the
16 chips of an instance (64 ranks at LNC=2), PP=4 along the ring, DP=2 over EFA,
ZeRO-1. State alone is 58.9 GiB per chip:

>>> from trainium_lab.units import GiB
>>> lay = layout("llama3-405b", tp=64, pp=4, dp=2, zero_stage=1, system="trn2-ultraserver", lnc=2,
...              micro_batch=1, n_micro_batches=16, recompute="selective")
>>> est = evaluate(lay)
>>> round(est.state_bytes / GiB, 1), round((est.hbm_bytes - est.state_bytes) / GiB, 1)
(58.9, 37.1)
>>> est.levels["tp"], est.levels["pp"], est.levels["dp"]
('instance', 'ultraserver', 'efa')
>>> round(est.dp_comm_s, 2)   # the EFA gradient all-reduce, to hide behind the backward pass
0.51
"""

from __future__ import annotations

from trainium_lab.layouts.engine import TORUS_LINK_MODELS, _comm  # noqa: F401  (_comm: tests and benchmarks clear its cache)
from trainium_lab.layouts.estimate import (IGNORED, MEMORY_PARTS, MOE_TIME_PARTS, TIME_PARTS, Layout,
                                           LayoutEstimate, OverlapDefault, custom_model, evaluate, layout,
                                           overlap_default, resolve_dp_overlap)
from trainium_lab.layouts.formulas import (interleaved_activation_factor, pipeline_bubble_fraction,
                                           tp_allreduces_per_layer)
from trainium_lab.layouts.planner import Plan, candidate_degrees, fully_sharded_table, plan, worked_example
from trainium_lab.sizing import resolve_model  # one home for "a preset name or a ModelPreset"

__all__ = [
    "Layout", "LayoutEstimate", "Plan", "IGNORED", "MEMORY_PARTS", "TIME_PARTS",
    "layout", "evaluate", "plan", "custom_model", "resolve_model",
    "pipeline_bubble_fraction", "tp_allreduces_per_layer", "fully_sharded_table",
    "worked_example", "candidate_degrees", "interleaved_activation_factor", "MOE_TIME_PARTS",
    "TORUS_LINK_MODELS", "OverlapDefault", "overlap_default", "resolve_dp_overlap",
]
