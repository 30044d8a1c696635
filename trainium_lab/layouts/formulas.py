"""The closed-form formulas of chapter 05, on their own: the 1F1B pipeline bubble, the
interleaved schedule's activation factor and the tensor-parallel all-reduces per layer.

The vectorised engine (:mod:`trainium_lab.layouts.engine`) applies the same formulas to arrays
of layouts; these scalar versions are what a learner checks by hand.

References
----------
M. Shoeybi et al., "Megatron-LM", arXiv:1909.08053 (2019), §3. D. Narayanan et al., "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473 (2021),
§2.2. V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198 (2022), §4.2.
"""

from __future__ import annotations

from trainium_lab._validate import choice, integer
from trainium_lab.sizing import RECOMPUTE_MODES

__all__ = ["pipeline_bubble_fraction", "interleaved_activation_factor", "tp_allreduces_per_layer"]


def pipeline_bubble_fraction(pp: int, n_micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle time of a 1F1B pipeline relative to the ideal: ``(p − 1) / m``, or ``(p − 1)/(v·m)``.

    With ``p`` stages and ``m`` micro-batches, a 1F1B (one-forward-one-backward)
    schedule runs ``m + p − 1`` micro-batch slots instead of ``m``: the pipeline
    takes ``p − 1`` slots to fill and drain. The bubble is ``(p − 1)`` slots, a
    fraction ``(p − 1)/m`` of the useful time (``(p − 1)/(m + p − 1)`` of the total).

    The interleaved schedule gives each device ``v`` chunks of ``L/(p·v)`` layers
    (``v`` *virtual stages*) instead of one block of ``L/p``. Filling and draining
    now costs ``p − 1`` chunk slots of ``1/v`` the time each: the bubble shrinks to
    ``(p − 1)/(v·m)``, for ``v`` times the pipeline sends.

    Parameters
    ----------
    pp : int
        Pipeline stages ``p`` (>= 1).
    n_micro_batches : int
        Micro-batches per step ``m`` (>= 1).
    virtual_stages : int
        Chunks per device ``v`` (1: plain 1F1B).

    Returns
    -------
    float
        Bubble time divided by ideal (bubble-free) time.

    References
    ----------
    Narayanan et al. 2021, arXiv:2104.04473, §2.2.1: bubble time fraction
    ``(p − 1)/m`` for the PipeDream-Flush (1F1B) schedule, as for GPipe; §2.2.2:
    ``(p − 1)/(v·m)`` for the interleaved schedule ("the pipeline bubble time is
    reduced by v"), at ``v`` times the communication.

    Examples
    --------
    >>> pipeline_bubble_fraction(4, 16)
    0.1875
    >>> pipeline_bubble_fraction(1, 1)
    0.0
    >>> pipeline_bubble_fraction(4, 16, virtual_stages=3)
    0.0625
    """
    p = integer("pp", pp, minimum=1)
    m = integer("n_micro_batches", n_micro_batches, minimum=1)
    v = integer("virtual_stages", virtual_stages, minimum=1, maximum=10**6)
    if v == 1:
        return (p - 1) / m
    return (p - 1) / (v * m)


def interleaved_activation_factor(pp: int, virtual_stages: int) -> float:
    """Activation memory of the first stage under interleaving, relative to plain 1F1B.

    Plain 1F1B keeps ``p`` micro-batches of ``L/p`` layers on the first stage: the
    activations of ``L`` layers. The interleaved schedule warms up with more
    micro-batches in flight: Korthikanti et al. give the total as ``L·(1 + (p − 1)/(p·v))``
    layers' worth. It follows from Megatron-LM's warm-up count: the first device runs
    ``2(p − 1) + (v − 1)·p`` chunk forwards before its first backward and holds one more
    in the steady state, each of ``L/(p·v)`` layers:
    ``(v·p + p − 1)·L/(p·v) = L·(1 + (p − 1)/(p·v))``. ``v = 1`` is plain 1F1B (factor 1).

    Parameters
    ----------
    pp : int
        Pipeline stages ``p`` (>= 1).
    virtual_stages : int
        Chunks per device ``v`` (>= 1).

    References
    ----------
    Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3 (interleaved schedule); NVIDIA
    Megatron-LM, ``megatron/training/theoretical_memory_usage.py``
    (``interleaved_schedule_memory_penalty``) and
    ``megatron/core/pipeline_parallel/schedules.py`` (warm-up micro-batches).

    Examples
    --------
    >>> interleaved_activation_factor(8, 1), interleaved_activation_factor(8, 2)
    (1.0, 1.4375)
    """
    p = integer("pp", pp, minimum=1, maximum=10**6)
    v = integer("virtual_stages", virtual_stages, minimum=1, maximum=10**6)
    if v == 1:
        return 1.0
    return 1.0 + (p - 1) / (p * v)


def tp_allreduces_per_layer(recompute: str = "none") -> int:
    """All-reduces one tensor-parallel transformer layer runs per micro-batch.

    Megatron-LM splits attention and MLP so that each needs one all-reduce in the
    forward pass (operator *g*) and one in the backward pass (operator *f*): 2 + 2
    per layer. Full recomputation runs the forward pass again during the backward
    pass, with its 2 all-reduces; selective recomputation recomputes only the
    attention core, which needs none. With sequence parallelism each all-reduce
    becomes a reduce-scatter plus an all-gather of the same total volume.

    References
    ----------
    Shoeybi et al. 2019, arXiv:1909.08053, §3 and Figure 4; Korthikanti et al.
    2022, arXiv:2205.05198, §4.2.2 (sequence parallelism) and §5.

    Examples
    --------
    >>> tp_allreduces_per_layer("selective"), tp_allreduces_per_layer("full")
    (4, 6)
    """
    mode = choice("recompute", recompute, RECOMPUTE_MODES)
    return 6 if mode == "full" else 4
