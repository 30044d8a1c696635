"""Chapter 05's views: the layout planner's result in sentences, and a TP degree in ranks and chips."""

from __future__ import annotations

import numpy as np

from trainium_lab import frameworks, layouts, specs
from trainium_lab._validate import instance, integer
from trainium_lab.layouts.estimate import _tp_text

__all__ = ["explain_plan", "level_meaning", "level_meanings", "tp_label"]


def tp_label(tp: int, ranks_per_chip: int) -> str:
    """A TP degree as ranks and chips, as every layout label says it.

    The course counts degrees in ranks (logical NeuronCores); a reader sizing hardware thinks
    in chips. The text is the one :meth:`trainium_lab.layouts.Layout.label` and the planner's
    ``label`` column start with.

    Examples
    --------
    >>> tp_label(64, 4), tp_label(2, 4), tp_label(8, 8)
    ('TP64 ranks = 16 chips', 'TP2 ranks = 0.5 chip', 'TP8 ranks = 1 chip')
    """
    return _tp_text(integer("tp", tp, minimum=1), integer("ranks_per_chip", ranks_per_chip, minimum=1))


def explain_plan(plan) -> list[str]:
    """Plain sentences about a layout search: the winner, where its time goes, what memory
    ruled out, and the best layout with other degrees.

    Parameters
    ----------
    plan : trainium_lab.layouts.Plan
        From :func:`trainium_lab.layouts.plan`.

    Returns
    -------
    list of str
        One sentence (or two) per line; every number is read from ``plan``, every layout named
        by its ``label`` (TP in ranks and in chips).

    Examples
    --------
    >>> lines = explain_plan(layouts.plan("llama3-8b", system="trn2.48xlarge", global_batch=64))
    >>> lines[1].startswith("Winner: TP")
    True
    """
    plan = instance("plan", plan, layouts.Plan, "a Plan from layouts.plan")
    c, a = plan.cluster, plan.all
    is_moe = plan.model.is_moe
    allowed = (1 - plan.min_headroom_fraction)
    lines = [f"{len(a)} layouts of {plan.model.name} on {c.n_systems} × {c.system} "
             f"({c.n_chips} chips, {c.n_ranks} ranks at LNC={c.lnc}), global batch "
             f"{plan.global_batch} sequences; {int(a.fits.sum())} fit with "
             f"{plan.min_headroom_fraction:.0%} of HBM kept free."]
    if plan.table.empty:
        least = a.sort_values("memory_gib").iloc[0]
        lines.append(f"Nothing fits: the leanest layout ({least.label}) needs {least.memory_gib:.1f} GiB "
                     f"per chip, more than {allowed:.0%} of {least.hbm_gib:.0f} GiB. Add chips, shard "
                     "more (ZeRO-3), recompute more or shrink the micro-batch.")
        return lines
    b = plan.table.iloc[0]
    time_parts = plan.time_parts
    parts = {p: float(b[f"{p}_s"]) for p in time_parts}
    overhead = {p: v for p, v in parts.items() if p != "compute"}
    worst = max(overhead, key=overhead.get)
    names = {"compute": "compute", "tp_comm": "tensor-parallel all-reduces", "pp_comm": "pipeline sends",
             "bubble": "the pipeline bubble", "dp_exposed": "exposed data-parallel traffic",
             "ep_comm": ("expert all-gathers and reduce-scatters (dispatch and combine)"
                         if plan.settings.get("ep_dispatch", "all-gather") == "all-gather"
                         else "expert all-to-alls (dispatch and combine)")}
    where = (f"TP groups stay within the {b.tp_level} level" if b.tp > 1 else "no TP")
    if is_moe:
        where += (f", EP groups ({b.ep} ranks over {b.ep_chips:g} chips, placed right after TP) land on "
                  f"the {b.ep_level} level" if b.ep > 1 else ", no EP (every rank holds every expert)")
    where += f", PP crosses the {b.pp_level} level" if b.pp > 1 else ", no PP"
    where += f", DP crosses the {b.dp_level} level" if b.dp > 1 else ", no DP"
    lines.append(f"Winner: {b.label}. {b.tokens_per_s:,.0f} tokens/s, {b.step_s:.2f} s per step, "
                 f"effective MFU {b.mfu_effective:.1%}; {b.memory_gib:.1f} GiB of {b.hbm_gib:.0f} GiB "
                 f"per chip ({b.headroom_gib:.1f} GiB free). {where}.")
    lines.append(_framework_sentence(plan))
    if b.virtual_stages > 1:
        lines.append(f"It interleaves {b.virtual_stages} virtual stages per device: the bubble is "
                     f"(p − 1)/(v·m) = {layouts.pipeline_bubble_fraction(int(b.pp), int(b.n_micro_batches), int(b.virtual_stages)):.1%} "
                     f"of the busy time instead of {layouts.pipeline_bubble_fraction(int(b.pp), int(b.n_micro_batches)):.1%}, "
                     f"for {b.virtual_stages}× the pipeline sends and "
                     f"{layouts.interleaved_activation_factor(int(b.pp), int(b.virtual_stages)):.2f}× the activations.")
    close = int((plan.table.tokens_per_s >= 0.98 * b.tokens_per_s).sum()) - 1
    if close:
        lines.append(f"{close} other fitting layout{'s are' if close > 1 else ' is'} within 2 % of it: a tie at "
                     "this level of modelling; choose among them by headroom and simplicity, then measure.")
    lines.append(f"Where its step goes: compute {parts['compute'] / b.step_s:.0%}; the largest overhead "
                 f"is {names[worst]} ({overhead[worst] / b.step_s:.1%})."
                 + (" Compute binds: overheads are small." if overhead[worst] < 0.1 * b.step_s
                    else f" {names[worst].capitalize()} binds after compute."))
    faster = a[(~a.fits) & (a.tokens_per_s > b.tokens_per_s)]
    if len(faster):
        # ties in memory (equal in exact arithmetic, not always in the last bit) go to the faster,
        # then to the label, so the sentence is the same on every processor
        f = (faster.assign(_memory=faster.memory_gib.round(6))
             .sort_values(["_memory", "tokens_per_s", "label"], ascending=[True, False, True], kind="stable").iloc[0])
        lines.append(f"Memory binds too: {len(faster)} faster layouts do not fit. The closest to fitting, "
                     f"{f.label}, would give {f.tokens_per_s / b.tokens_per_s - 1:.1%} more tokens/s but "
                     f"needs {f.memory_gib:.1f} GiB per chip ({f.activations_gib:.1f} GiB of activations), "
                     f"above the {allowed * f.hbm_gib:.1f} GiB allowed.")
    else:
        lines.append("Memory does not bind: no faster layout was dropped for memory.")
    other = plan.table[(plan.table.tp != b.tp) | (plan.table.pp != b.pp) | (plan.table.dp != b.dp)
                       | (plan.table.ep != b.ep)]
    if len(other):
        o = other.iloc[0]
        diff = {p: float(o[f"{p}_s"]) - parts[p] for p in time_parts}
        why = max(diff, key=diff.get)
        lines.append(f"Best with other degrees: {o.label}, {1 - o.tokens_per_s / b.tokens_per_s:.1%} "
                     f"slower, mostly from {names[why]} (+{diff[why]:.2f} s per step).")
    if is_moe:
        no_ep = plan.table[plan.table.ep == 1]
        if b.ep > 1 and len(no_ep):
            n = no_ep.iloc[0]
            lines.append(f"Without expert parallelism the best is {n.label}: "
                         f"{1 - n.tokens_per_s / b.tokens_per_s:.1%} slower.")
        elif b.ep > 1:
            lines.append("No layout without expert parallelism fits: EP is what makes the experts fit.")
        lines.extend(_expert_lines(plan, b))
    lines.append(_overlap_sentence(plan))
    return lines


def _expert_lines(plan, b) -> list[str]:
    """How the winner splits its experts, and what narrow expert matmuls cost it."""
    m = plan.model
    width = m.expert_ffn_dim / int(b.expert_tp)
    cols = specs.chip(plan.cluster.chip).core.tensor_cols
    method = plan.settings.get("ep_dispatch", "all-gather")
    out = [f"EP exchange costed as {method} (NxD runs all-gather + reduce-scatter; all-to-all is the "
           f"GShard/Megatron alternative)."]
    block = plan.settings.get("dropless_block_size")
    if block:
        out.append(f"Dropless through the blockwise matmul (blocks of {block} tokens): the experts compute "
                   f"{float(b.expert_compute_factor):.2f}× the routed work (every provisioned block; a bound).")
    eff = float(b.expert_matmul_efficiency)
    text = (f"Experts split ETP{int(b.expert_tp)}: {width:g} of each expert's {m.expert_ffn_dim:,} columns per "
            f"rank")
    if not plan.settings.get("narrow_expert_penalty", True):
        out.append(text + "; the narrow-matmul penalty is off.")
    elif eff < 1.0:
        out.append(text + f", which fills {eff:.0%} of the {cols}-wide tensor engine: a narrow-matmul penalty, expert matmuls at "
                   f"{eff:.0%} of the MFU (assumption built on AWS's rule that sharded expert widths should "
                   f"be >= {cols}).")
    else:
        out.append(text + f", whole {cols}-column tiles: no narrow-matmul penalty.")
    return out


def _fw_names(keys) -> str:
    return ", ".join(frameworks.framework(k).name for k in keys)


def _framework_sentence(plan) -> str:
    """Which framework the search was limited to, or which frameworks can run the winner."""
    b = plan.table.iloc[0]
    fw = frameworks.resolve_framework(plan.framework)
    recipe = plan.settings.get("recipe_name", "bf16-adam")
    if fw is not None:
        rel = f" (release {fw.status_release})" if fw.status_release else ""
        return (f"Framework: {fw.name}, {fw.status}{rel}. The search kept only what it runs (ZeRO stages "
                f"{', '.join(map(str, fw.zero_stages))}; pipeline schedules "
                f"{', '.join(fw.pipeline_schedules) or 'none'}) and sized memory with recipe `{recipe}`.")
    who = plan.runnable_by()
    if who:
        return f"No framework named: {_fw_names(who)} can run the winner (memory sized with recipe `{recipe}`)."
    t = plan.table
    args = [t[c].to_numpy() for c in ("tp", "pp", "dp", "ep", "zero_stage", "virtual_stages")]
    masks = {f.key: frameworks.runnable_mask(f, *args, plan.model.n_layers) for f in frameworks.frameworks()}
    anyone = np.logical_or.reduce(list(masks.values()))
    text = (f"No framework named, and no Neuron training framework can run the winner (ZeRO-{int(b.zero_stage)}"
            f"{' with pipeline parallelism' if b.pp > 1 else ''}{' with interleaving' if b.virtual_stages > 1 else ''}).")
    if anyone.any():
        i = int(np.argmax(anyone))
        o = t.iloc[i]
        who = [k for k, mk in masks.items() if mk[i]]
        text += (f" The best layout one can run is {o.label} ({_fw_names(who)}), "
                 f"{1 - o.tokens_per_s / b.tokens_per_s:.1%} slower; name a framework (framework=...) to search "
                 "only what it runs.")
    return text


def _overlap_sentence(plan) -> str:
    """The data-parallel overlap the plan assumed, and whether its winner holds across the range."""
    d = layouts.overlap_default("dp_overlap")
    own = float(plan.settings.get("dp_overlap", d.default))
    s = plan.overlap_sensitivity()
    label = "the labelled default, an assumption" if own == d.default else "your input"
    head = (f"Data-parallel overlap is an input: dp_overlap = {own:.2f} ({label}; plausible range "
            f"{d.low:.1f}–{d.high:.1f}).")
    # the range is an assumption; what a framework's schedule leaves exposed is a separate input
    schedule = ("" if plan.framework is not None else
                " The teaching search also places every data-parallel collective behind compute; AWS's "
                "compiler-default schedule leaves the FSDP reduce-scatters exposed (name a framework, "
                "framework=..., to charge its schedule).")
    changed = s[~s.same_winner]
    if changed.empty:
        return (head + f" The winner holds across that range, itself an assumption "
                f"(its step at {d.low:.1f}: {s.step_s.iloc[-1]:.2f} s)." + schedule)
    first = changed.sort_values("dp_overlap", ascending=False).iloc[0]
    low = s.iloc[-1]
    where = (f"at dp_overlap = {low.dp_overlap:.2f}, the lowest tried, the best is {low.label}"
             if first.dp_overlap == low.dp_overlap else
             f"at dp_overlap = {first.dp_overlap:.2f} the best is {first.label}; at {low.dp_overlap:.2f}, {low.label}")
    return (head + f" The winner depends on it: {where} ({low.tokens_per_s:,.0f} tokens/s, "
            f"{low.step_s:.2f} s per step)." + schedule)


def level_meaning(system: str, level: str, chips_in_level: float | None = None) -> str:
    """What a package level is on ``system``, in the words its source uses, for a table column.

    The package names its levels ``chip``, ``instance``, ``ultraserver`` and ``efa`` on every
    system. A Trn3 UltraServer is built of servers, not EC2 instances (``data/systems.csv``,
    ``n_instances``, note "servers"), so its level ``instance`` reads as its server.

    Examples
    --------
    >>> level_meaning("trn3-gen2-ultraserver", "instance", 4)
    '4-chip server'
    >>> level_meaning("trn2-ultraserver", "instance", 16), level_meaning("trn2-ultraserver", "efa")
    ('16-chip instance', 'EFA')
    """
    from trainium_lab.topology import LEVEL_NAMES

    if level not in LEVEL_NAMES:
        raise ValueError(f"level must be one of {LEVEL_NAMES}, got {level!r}")
    chips = "" if chips_in_level is None or chips_in_level != chips_in_level else f"{chips_in_level:.0f}-chip "
    if level == "instance":
        try:
            servers = specs.fact(system, "n_instances").note == "servers"
        except (KeyError, ValueError):
            servers = False
        return f"{chips}{'server' if servers else 'instance'}"
    if level == "ultraserver":
        return f"{chips}UltraServer"
    if level == "efa":
        return "EFA"
    return f"{chips}chip"


def level_meanings(df: pd.DataFrame) -> list[str]:
    """:func:`level_meaning` for each row of a frame with columns ``system``, ``level`` and
    ``chips_in_level`` (``parallelism.level_ratios_table``, ``parallelism.tp_limit_table``).

    Examples
    --------
    >>> from trainium_lab import parallelism
    >>> level_meanings(parallelism.level_ratios_table(("trn3-gen2-ultraserver",)))
    ['4-chip server', '144-chip UltraServer', 'EFA']
    """
    return [level_meaning(s, lv, n) for s, lv, n in zip(df["system"], df["level"], df["chips_in_level"])]
