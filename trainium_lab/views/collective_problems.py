"""Chapter 03's worked problems, worked by hand: the arithmetic of each answer as markdown.

Each function takes the problem's givens, does the arithmetic a learner would do on paper (the
formulas of :mod:`trainium_lab.collectives`, written out), and returns the working as markdown for
:func:`trainium_lab.notebook.answer` to fold. The chapter checks every answer with the package in
the cell under it, so a working here can never drift from the model silently. Hardware figures
come from :mod:`trainium_lab.specs` (Trainium2's dense BF16 rate, NeuronLink-v3 inside an instance,
EFA per chip).
"""

from __future__ import annotations

import math

from trainium_lab import collectives
from trainium_lab._validate import integer, positive

__all__ = ["dp_in_one_instance", "dp_across_instances", "hierarchical_fix", "where_tp_lands",
           "hierarchical_or_accumulate", "bucket_size"]


def _backward_s(n_params: float, tokens_per_chip: float, flops_per_s: float) -> float:
    """The backward pass's time at peak, 4 · N · B / C (twice the forward's 2 · N · B FLOPs)."""
    return 4 * n_params * tokens_per_chip / flops_per_s


def _trn2():
    """(dense BF16 FLOP/s, torus bytes/s per chip, EFA bytes/s per chip, chips per trn2.48xlarge)."""
    from trainium_lab import specs

    return (specs.chip("trn2").dense_flops_per_s["bf16"], specs.link("trn2-neuronlink-intra").bytes_per_s,
            specs.link("trn2-efa").bytes_per_s, specs.system("trn2.48xlarge").n_chips)


def dp_in_one_instance(n_params: float, tokens_per_chip: float) -> str:
    """Problem 1: pure DP on one trn2.48xlarge; is the BF16 gradient all-reduce hidden?

    >>> "hides" in dp_in_one_instance(8e9, 8192)
    True
    """
    n, b = positive("n_params", n_params), positive("tokens_per_chip", tokens_per_chip)
    c, torus, _, k = _trn2()
    back = _backward_s(n, b, c)
    ar = collectives.ring_allreduce_s(2 * n, k, torus)
    verdict = "≫ that, so the all-reduce hides" if b >= c / torus else "below it: the all-reduce is exposed"
    return (f"Threshold: C/W = {c / 1e12:.0f}e12 FLOP/s ÷ {torus / 1e9:,.0f}e9 bytes/s = **{c / torus:,.0f} tokens "
            f"per chip**; {b:,.0f} {verdict}.\n\n"
            f"Backward pass: 4 · N · B / C = 4 · {n:.0e} · {b:,.0f} / {c:.3g} = **{back:.3f} s**.\n\n"
            f"All-reduce: 2 · ({k - 1}/{k}) · 2N / W = 2 · {(k - 1) / k:.4f} · {2 * n:.1e} B / {torus:.3g} B/s = "
            f"**{ar * 1e3:.1f} ms**, {ar / back:.0%} of the backward pass.")


def dp_across_instances(n_params: float, tokens_per_chip: float, n_instances: int) -> str:
    """Problem 2: pure DP over ``n_instances`` trn2.48xlarge, one flat ring across EFA.

    >>> "communication-bound" in dp_across_instances(8e9, 4096, 64)
    True
    """
    n, b = positive("n_params", n_params), positive("tokens_per_chip", tokens_per_chip)
    m = integer("n_instances", n_instances, minimum=1)
    c, _, efa, k = _trn2()
    chips = m * k
    back = _backward_s(n, b, c)
    ar = collectives.ring_allreduce_s(2 * n, chips, efa)
    bound = "**communication-bound**" if c / efa > b else "**hidden**"
    return (f"Threshold over EFA: C/W = {c / 1e12:.0f}e12 / {efa / 1e9:.0f}e9 = **{c / efa:,.0f} tokens per chip**, "
            f"{c / efa / b:.1f} times the {b:,.0f} the job has: {bound}.\n\n"
            f"Backward pass: 4 · N · B / C = **{back * 1e3:.0f} ms**. "
            f"All-reduce: 2 · ({chips - 1}/{chips}) · 2N / W_EFA = **{ar:.2f} s**, {ar / back:.1f}× the "
            f"backward pass: after the backward pass ends, the step waits about {ar - back:.2f} s "
            f"({(ar - back) / back:.1f}× the backward pass) for the network.")


def hierarchical_fix(n_params: float, tokens_per_chip: float, n_instances: int) -> str:
    """Problem 3: the same job with a hierarchical all-reduce (torus, then EFA, then torus).

    >>> "sixteen rings" in hierarchical_fix(8e9, 4096, 64)
    True
    """
    n, b = positive("n_params", n_params), positive("tokens_per_chip", tokens_per_chip)
    m = integer("n_instances", n_instances, minimum=2)
    c, torus, efa, k = _trn2()
    inside = collectives.ring_allreduce_s(2 * n, k, torus)      # reduce-scatter + all-gather in the torus
    across = collectives.ring_allreduce_s(2 * n / k, m, efa)    # ring all-reduce of a 1/k shard over EFA
    back = _backward_s(n, b, c)
    hidden = inside + across <= back
    return (f"Torus phases: 2 · ({k - 1}/{k}) · 2N / W_torus = **{inside * 1e3:.1f} ms**. "
            f"EFA phase: 2 · ({m - 1}/{m}) · (2N/{k}) / W_EFA = **{across * 1e3:.0f} ms** (each chip sends its own "
            f"shard through its own EFA interface, so sixteen rings run side by side).\n\n"
            f"Total **{(inside + across) * 1e3:.0f} ms** against a backward pass of {back * 1e3:.0f} ms: "
            + (f"**hidden**, with {(back - inside - across) * 1e3:.0f} ms to spare. " if hidden else
               f"**exposed** by {(inside + across - back) * 1e3:.0f} ms. ")
            + "The EFA term fell sixteen-fold; the torus term is what is left.")


def where_tp_lands(good, bad, size_bytes: float) -> str:
    """Problem 4: one TP all-reduce of ``size_bytes`` under two placements (``topology.place``).

    >>> from trainium_lab import topology
    >>> g = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="tp-pp-dp")
    >>> b = topology.place(tp=64, pp=4, dp=2, system="trn2-ultraserver", lnc=2, ordering="dp-pp-tp")
    >>> "(b) Four per layer" in where_tp_lands(g, b, 2 * 4096 * 16384)
    True
    """
    from trainium_lab import topology
    from trainium_lab._validate import instance
    from trainium_lab.units import MB, format_bandwidth, format_seconds

    good = instance("good", good, topology.Placement, "a topology.place(...) result")
    bad = instance("bad", bad, topology.Placement, "a topology.place(...) result")
    s = positive("size_bytes", size_bytes)
    lv_good, lv_bad = good.level("tp"), bad.level("tp")
    n_good, n_bad = (p.summary().set_index("kind").n_chips["tp"] for p in (good, bad))
    by_hand = 2 * (n_good - 1) / n_good * s / lv_good.bytes_per_s     # seconds, ring over the torus
    t_bad = collectives.group_collective_s(bad, "tp", s)
    return (f"(a) `{'-'.join(good.ordering[:3])}`: the {n_good} chips of a TP group are one instance's torus, "
            f"W = {format_bandwidth(lv_good.bytes_per_s)}: 2 · ({n_good - 1}/{n_good}) · {s / MB:.0f} MB / W = "
            f"**{format_seconds(by_hand)}**. `{'-'.join(bad.ordering[:3])}`: consecutive TP ranks are dp · pp = "
            f"{bad.degrees['dp'] * bad.degrees['pp']} ranks apart, so a group spreads over {n_bad} chips in both "
            f"UltraServers and its slowest level is {lv_bad.name}, W = {format_bandwidth(lv_bad.bytes_per_s)} per "
            f"chip, shared by the {bad.cluster.ranks_per_chip} TP groups each chip serves: "
            f"**{format_seconds(t_bad)}**.\n\n"
            f"(b) Four per layer: **{format_seconds(4 * by_hand)}** against **{format_seconds(4 * t_bad)}**.")


def hierarchical_or_accumulate(n_params: float, tokens_per_chip: float, n_instances: int) -> str:
    """Chained problem 1: a hierarchical all-reduce, or gradient accumulation over more sequences?

    >>> "**not** hide the flat ring" in hierarchical_or_accumulate(8e9, 8192, 16)
    True
    """
    from trainium_lab.units import GB, format_seconds

    n, b = positive("n_params", n_params), positive("tokens_per_chip", tokens_per_chip)
    m = integer("n_instances", n_instances, minimum=2)
    c, torus, efa, k = _trn2()
    chips = m * k
    t_back = _backward_s(n, b, c)
    t_flat = collectives.ring_allreduce_s(2 * n, chips, efa)
    t_hier = collectives.hierarchical_allreduce_s(2 * n, [(k, torus), (m, efa)])
    need = collectives.dp_comm_bound_tokens_per_chip(c, efa, chips)
    seqs = math.ceil(need / b)
    return (f"1. Backward: 4 × {n:.2e} × {b:,.0f} ÷ {c:.3g} FLOP/s = **{format_seconds(t_back)}**.\n"
            f"2. Flat ring: 2 × ({chips - 1}/{chips}) × {2 * n / GB:.0f} GB ÷ {efa / GB:.0f} GB/s = "
            f"**{format_seconds(t_flat)}**, {t_flat / t_back:.1f}× the backward pass: exposed.\n"
            f"3. Hierarchical: **{format_seconds(t_hier)}**, hidden = **{t_hier <= t_back}**.\n"
            f"4. The flat ring hides above **{need:,.0f} tokens per chip**: **{seqs:.0f} sequences** per chip per "
            f"step.\n\n"
            f"**Decision:** {'use the hierarchical all-reduce' if t_hier <= t_back else 'accumulate'}: it hides the "
            f"traffic at the same batch. Accumulating {seqs:.0f} sequences would **not** hide the flat ring: the "
            f"reduction starts only when the gradients are final, so only the last micro-batch's backward overlaps "
            f"it and {format_seconds(t_flat - t_back)} stays exposed every step (chapter 05); processing them "
            f"together in one backward pass would hide it, if their activations fit. Accumulation only spreads that "
            f"over {seqs:.0f}× the tokens ({(t_flat - t_back) / (seqs * t_back):.0%} of the compute instead of "
            f"{(t_flat - t_back) / t_back:.0%}), and it multiplies the global batch by {seqs:.0f} "
            f"({chips * b:,.0f} → {chips * b * seqs:,.0f} tokens per step), which changes the optimization, not "
            f"only the speed.")


def bucket_size(n_params: float, n_ranks: int = 16, candidates_mb: tuple[int, ...] = (4, 16, 64, 256)) -> str:
    """Chained problem 2: the smallest gradient bucket whose latency share is at most 10 %.

    >>> "**Decision:**" in bucket_size(8e9)
    True
    """
    from trainium_lab import specs
    from trainium_lab.units import GB, MB, format_seconds

    n = positive("n_params", n_params)
    r = integer("n_ranks", n_ranks, minimum=2)
    if not candidates_mb:
        raise ValueError("candidates_mb must name at least one bucket size in MB; got ()")
    efa_link = specs.link("trn2-efa")
    efa, alpha = efa_link.bytes_per_s, efa_link.latency_s
    s_star = collectives.latency_crossover_bytes(r, efa, alpha)
    lat = 2 * (r - 1) * alpha
    share = {mb: lat / collectives.ring_allreduce_s(positive("candidates_mb", mb) * MB, r, efa, alpha)
             for mb in candidates_mb}
    ok = [mb for mb, sh in share.items() if sh <= 0.10]
    if not ok:
        raise ValueError(f"candidates_mb must include a size of at least {9 * s_star / MB:.0f} MB; got {candidates_mb}")
    pick = min(ok)
    grads = 2 * n
    n_buckets = math.ceil(grads / (pick * MB))
    return (f"1. S* = {r} × {format_seconds(alpha)} × {efa / GB:.0f} GB/s = **{s_star / MB:.1f} MB**.\n"
            f"2. At S = S* the latency is {lat / collectives.ring_allreduce_s(s_star, r, efa, alpha):.0%} of the "
            f"time; the share is 1 / (1 + S/S*), so it falls to 10 % at S = 9 × S* ≈ **{9 * s_star / MB:.0f} MB**. "
            "Per bucket size: " + ", ".join(f"{mb} MB {sh:.0%}" for mb, sh in share.items()) + ".\n"
            f"3. {grads / GB:.0f} GB of gradients in {pick} MB buckets: **{n_buckets} buckets**, "
            f"**{format_seconds(n_buckets * lat)}** of latency per step.\n\n"
            f"**Decision:** **{pick} MB**, the smallest that keeps latency under a tenth of each bucket's time. "
            "Larger buckets cut latency further but wait longer to fill, so the first all-reduce starts later in "
            "the backward pass and less of the traffic overlaps it.")
