"""The training plan as a document: Markdown and HTML an engineer attaches to a capacity request.

Every number comes from a :class:`trainium_lab.planning.RunPlan` (and the functions it offers);
this module only formats and arranges them. The document is built once as a list of blocks
(:func:`blocks`) and rendered to Markdown (:func:`to_markdown`) or to a self-contained HTML page
(:func:`to_html`), so both say the same thing.

Sections (:data:`SECTIONS`): summary, inputs with their sources, chapter 04's sizing beside the
plan, the layout with its rank-to-chip map, memory per chip, step time, failures and
checkpoints, compiles, wall time and cost, sensitivity, the launch environment, the pre-flight
checklist, what the plan leaves out, and the sources.

>>> from trainium_lab import planning
>>> p = planning.plan_run("llama3-8b", 1e11, n_systems=1, usd_per_hour=40.0)
>>> md = to_markdown(p)
>>> all(f"## {s}" in md for s in SECTIONS)
True
"""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from trainium_lab import frameworks, layouts, planning, specs, topology
from trainium_lab._validate import instance
from trainium_lab.units import GB, GiB, format_bytes, format_count, format_seconds

__all__ = ["SECTIONS", "blocks", "to_markdown", "to_html", "money", "launch_script",
           "rank_map", "fmt_value", "inline_html"]

#: the document's sections, in order
SECTIONS: tuple[str, ...] = (
    "Summary", "Inputs", "Sizing (chapter 04) beside the plan", "Layout and rank-to-chip map",
    "Memory per chip", "Step time", "Failures and checkpoints", "Compiles", "Wall time and cost",
    "Sensitivity", "Launch environment", "Pre-flight checklist", "What this plan leaves out", "Sources",
)

_INPUT_NAMES = {
    "mfu": "MFU", "usd_per_hour": "price per instance-hour", "chip_mtbf_s": "chip MTBF",
    "checkpoint_write_bytes_per_s": "checkpoint write bandwidth", "restart_s": "restart time",
    "compile_s": "compile time per graph", "n_graphs": "distinct graphs",
    "instance_mtbf_s": "instance MTBF",
}
_PART_NAMES = {"weights": "weights", "gradients": "gradients", "optimizer": "optimizer state",
               "activations": "activations", "compute": "compute", "tp_comm": "TP all-reduces",
               "pp_comm": "pipeline sends", "bubble": "pipeline bubble", "dp_exposed": "exposed DP traffic",
               "ep_comm": "expert all-to-alls"}


def money(usd: float) -> str:
    """USD with thousands separators: two decimals below 100, none above.

    >>> money(1234567.8), money(0.1234)
    ('1,234,568 USD', '0.12 USD')
    """
    return f"{usd:,.2f} USD" if abs(usd) < 100 else f"{usd:,.0f} USD"


def fmt_value(value: Any, unit: str) -> str:
    """One input's value with its unit, readable (bytes/s as GB/s, seconds as min/h/days).

    >>> fmt_value(1e10, "bytes/s"), fmt_value(600.0, "s"), fmt_value(0.4, "fraction")
    ('10.0 GB/s', '10.0 min', '40%')
    """
    if isinstance(value, str) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, (tuple, list)):  # a (low, high) range
        return " – ".join(fmt_value(v, unit) for v in value)
    if unit == "USD":
        return money(value) if value else "0 (not given)"
    if unit == "bytes/s":
        return f"{value / GB:,.1f} GB/s"
    if unit == "s":
        return format_seconds(value)
    if unit == "fraction":
        return f"{value:.0%}"
    if unit == "USD/hour":
        return f"{value:,.2f} USD/h"
    if unit in ("count", "tokens", "sequences"):
        return f"{value:,.4g} {unit}" if value >= 1e6 else f"{value:,.0f} {unit}"
    return f"{value:g} {unit}".strip()


def _plan(plan: object) -> planning.RunPlan:
    return instance("plan", plan, planning.RunPlan, "a RunPlan from planning.plan_run(...)")


def rank_map(plan: planning.RunPlan, system_index: int = 0) -> pd.DataFrame:
    """The rank-to-chip map of one system of the plan: one row per chip.

    Columns: ``chip`` (global index), ``instance``, ``position`` (row, col in the instance
    grid), ``ranks`` (first–last), ``tp ranks`` (the TP coordinates it holds), ``pp stage``,
    ``dp replica``.
    """
    p = _plan(plan)
    lay = p.layout
    c = lay.cluster
    placed = topology.place(lay.tp, lay.pp, lay.dp, lay.ep, system=c.system, n_systems=c.n_systems,
                            lnc=c.lnc, ordering="tp-ep-pp-dp" if lay.ep > 1 else "tp-pp-dp")
    r = placed.ranks
    r = r[r["system"] == system_index]
    rows = []
    for chip, g in r.groupby("global_chip", sort=True):
        first = g.iloc[0]

        def span(col: str) -> str:
            lo, hi = int(g[col].min()), int(g[col].max())
            return f"{lo}" if lo == hi else f"{lo}–{hi}"

        row = {"chip": int(chip), "instance": int(first.instance),
               "position": f"({int(first.row)}, {int(first.col)})", "ranks": span("rank"),
               "tp ranks": span("tp")}
        if lay.ep > 1:
            row["ep ranks"] = span("ep")
        rows.append({**row, "pp stage": span("pp"), "dp replica": span("dp")})
    return pd.DataFrame(rows)


def launch_script(plan: planning.RunPlan) -> str:
    """The launch environment as shell lines: ``export NAME=value`` for the variables the plan
    sets, comments for the ones it leaves to the framework and for the process count."""
    env = planning.launch_environment(_plan(plan))
    lines = []
    for row in env.itertuples():
        if row.name == "processes per instance":
            lines.append("# python train.py   (one JAX process on each instance, owning all its NeuronCores)"
                         if row.kind.startswith("launcher (python") else
                         f"# torchrun --nproc_per_node={row.value}   (one process per logical NeuronCore)")
        elif row.value.startswith("("):
            lines.append(f"# {row.name}: {row.value.strip('()')}")
        elif " " in row.name:  # a program setting, not an environment variable
            lines.append(f"# {row.name}: {row.value}")
        elif row.name.startswith(("NEURON", "TORCH_NEURONX")):
            value = row.value.split(" (")[0]
            quoted = f'"{value}"' if " " in value else value
            lines.append(f"export {row.name}={quoted}")
    return "\n".join(lines)


def _table(df: pd.DataFrame) -> pd.DataFrame:
    return df.reset_index(drop=True)


def _framework_text(p: planning.RunPlan) -> str:
    """Which training framework runs the layout: the one chosen, or those that can."""
    lay = p.layout
    key = p.inputs.get("framework")
    if key:
        f = frameworks.framework(key)
        sched = frameworks.overlap_schedule(key, p.inputs.get("overlap_setting"))
        flags = (f"set `{' '.join(p.flags)}`" + (" (experimental on the 2.32 page)" if sched.experimental else "")
                 if p.flags else "no flag is needed")
        return (f"Training framework: **{f.name}**, {p.inputs.get('framework_status') or f.status}; the layout "
                f"was searched among what it runs, with recipe `{p.inputs['recipe_name']}`. Overlap: its "
                f"`{sched.setting}` schedule places {sched.gather_overlap:.0%} of the weight all-gathers and "
                f"{sched.reduce_overlap:.0%} of the gradient reductions behind compute (AWS's compute-"
                f"communication overlap page); {flags}.")
    who = frameworks.layout_runnable_by(lay)
    head = ("**Teaching search** (framework='any'): every layout, every data-parallel collective behind "
            "compute; no framework was checked. ")
    if who:
        return (head + "This layout can be run by "
                + ", ".join(f"**{frameworks.framework(k).name}** ({frameworks.status_text(k)})" for k in who)
                + ", whose own overlap schedules may be slower.")
    return head + ("**No Neuron training framework can run this layout** (data/frameworks.csv): plan again "
                   "without framework='any'.")


def blocks(plan: planning.RunPlan) -> list[tuple[str, Any]]:
    """The document as blocks: ``("h1" | "h2" | "p" | "table" | "code" | "list" | "olist", content)``."""
    p = _plan(plan)
    r = p.results
    est, lay, size = p.estimate, p.layout, p.sizing
    out: list[tuple[str, Any]] = []
    h2 = lambda text: out.append(("h2", text))  # noqa: E731
    para = lambda text: out.append(("p", text))  # noqa: E731

    out.append(("h1", f"Training plan: {p.model.name} on {p.n_systems} × {p.system}"))
    h2("Summary")
    para(p._repr_markdown_())
    deadline = "" if p.deadline_s is None else (
        f" No count of {p.system} meets the deadline of {format_seconds(p.deadline_s)}: this plan is the "
        f"fastest count (the summary gives its verdict, and a system that would meet it)."
        if p.fastest_count else
        f" The count of systems was chosen for a deadline of {format_seconds(p.deadline_s)} "
        f"by an exact search: every count below {p.n_systems} misses it ({p.systems_bounded} ruled out "
        f"by the perfect-scaling and state floors, {len(p.systems_tried) - 1} by the layout planner; "
        f"{len(p.systems_tried)} counts planned in all).")
    para(f"Assumptions (no public source): {', '.join(_INPUT_NAMES.get(a, a.replace('_', ' ')) for a in p.assumptions)}."
         + deadline)

    h2("Inputs")
    t = p.inputs_table()
    out.append(("table", pd.DataFrame({"input": t["input"],
                                       "value": [fmt_value(v, u) for v, u in zip(t["value"], t["unit"])],
                                       "basis": t["basis"]})))

    h2("Sizing (chapter 04) beside the plan")
    out.append(("table", pd.DataFrame([
        ("training state (unsharded)", format_bytes(size.state_bytes)),
        (f"fewest chips (ZeRO-{size.zero_stage}, {size.activation_share:.0%} of HBM kept for activations)",
         f"{size.min_chips}" if size.min_chips is not None else "never fits"),
        ("fewest systems by that rule", f"{size.min_systems}"),
        (f"parameters a token uses (N of 6ND){'; memory holds all ' + format_count(size.n_params) if size.n_active_params else ''}",
         format_count(size.active_params)),
        ("training FLOPs (6 × N_active × D)", f"{size.flops:.3e}"),
        (f"instance-days at {size.mfu:.0%} MFU, perfect scaling (chapter 04)", f"{size.instance_days:,.1f}"),
        ("instance-days of this plan (every loss counted)", f"{p.instance_days:,.1f}"),
        ("chips of this plan", f"{p.n_chips}"),
    ], columns=["quantity", "value"])))
    para("Chapter 04's instance-days assume the MFU is reached on 6ND FLOPs with no communication, bubble, "
         "failure or compile; the plan's step time (chapter 05) adds the attention FLOPs, recomputation and "
         "exposed communication, and the losses below come on top.")

    h2("Layout and rank-to-chip map")
    para(f"**{lay.label()}** on {p.n_chips} chips ({p.n_systems} × {p.system}, {p.n_instances} "
         f"instance{'s' if p.n_instances != 1 else ''} of "
         f"{p.instance_type}), LNC={p.lnc}: {lay.cluster.n_ranks} ranks. Degrees count ranks (logical "
         f"NeuronCores), {lay.cluster.ranks_per_chip} per chip.")
    para(_framework_text(p))
    placed = topology.place(lay.tp, lay.pp, lay.dp, lay.ep, system=lay.cluster.system,
                            n_systems=lay.cluster.n_systems, lnc=lay.cluster.lnc,
                            ordering="tp-ep-pp-dp" if lay.ep > 1 else "tp-pp-dp")
    summ = placed.summary()
    summ = summ[summ["degree"] > 1]
    out.append(("table", pd.DataFrame({
        "group": summ["kind"].str.upper(), "degree (ranks)": summ["degree"], "groups": summ["n_groups"],
        "chips per group": summ["n_chips"], "slowest level": summ["level"],
        "bandwidth per chip": ["-" if b is None or (isinstance(b, float) and math.isnan(b)) else f"{b / GB:,.0f} GB/s"
                               for b in summ["bytes_per_s"]],
        "direction": summ["direction"]})))
    if placed.problems:
        out.append(("list", list(placed.problems)))
    para(f"Rank-to-chip map of system 0 (every system repeats it; rank r runs on logical core "
         f"r mod {lay.cluster.ranks_per_chip} of chip r div {lay.cluster.ranks_per_chip}; TP innermost, "
         + ("then EP, " if lay.ep > 1 else "") + "then PP, then DP). Print and check this map at the start of "
         "every job.")
    out.append(("table", rank_map(p)))

    h2("Memory per chip")
    m = est.memory_table()
    out.append(("table", pd.DataFrame({"part": [_PART_NAMES.get(x, x) for x in m["part"]],
                                       "GiB per chip": [f"{g:,.1f}" for g in m["gib"]]})))
    para(f"Total **{est.total_bytes / GiB:,.1f} GiB** of {est.hbm_bytes / GiB:,.0f} GiB HBM; "
         f"{est.headroom_bytes / GiB:,.1f} GiB left, {p.inputs['min_headroom_fraction']:.0%} kept free "
         f"({'fits' if est.fits else 'does not fit'}).")

    h2("Step time")
    tt = est.time_table()
    out.append(("table", pd.DataFrame({"part": [_PART_NAMES.get(x, x) for x in tt["part"]],
                                       "seconds per step": [f"{s:,.3f}" for s in tt["seconds"]],
                                       "share": [f"{s:.1%}" for s in tt["share"]]})))
    para(f"Step **{est.step_s:,.2f} s** for {lay.tokens_per_step:,} tokens: **{est.tokens_per_s:,.0f} tokens/s**, "
         f"effective MFU {est.mfu_effective:.1%} (MFU while computing {est.mfu:.0%}). Levels crossed: "
         + ", ".join(f"{k.upper()} {v}" for k, v in est.levels.items()) + ".")

    h2("Failures and checkpoints")
    basis = ("the Llama 3 per-GPU proxy (chapter 06; a GPU cluster, no Trainium rate is published)"
             if p.inputs["chip_mtbf_is_proxy"] else "an assumption")
    out.append(("table", pd.DataFrame([
        ("checkpoint size (weights and optimizer state)", format_bytes(r["checkpoint_bytes"], binary=False)),
        ("write time at the checkpoint bandwidth", format_seconds(r["checkpoint_write_s"])),
        (f"blocking cost per checkpoint ({p.inputs['checkpoint_mode']})", format_seconds(r["checkpoint_cost_s"])),
        (f"job MTBF ({p.n_chips} chips; chip MTBF {format_seconds(p.inputs['chip_mtbf_s'])}, {basis})",
         format_seconds(r["job_mtbf_s"])),
        ("checkpoint interval (exact optimum, chapter 06)", format_seconds(r["checkpoint_interval_s"])),
        ("Young's interval √(2δM), for comparison", format_seconds(r["young_interval_s"])),
        ("one restart: detect and relaunch + reload + recompile",
         f"{format_seconds(r['restart_total_s'])} = {format_seconds(p.inputs['restart_s'])} + "
         f"{format_seconds(r['reload_s'])} + {format_seconds(r['restart_compile_s'])}"),
        ("expected failures during the run", f"{r['expected_failures']:.2g}"),
        ("share of training time lost (checkpoints, rework, restarts)", f"{r['lost_fraction']:.2%}"),
    ], columns=["quantity", "value"])))

    h2("Compiles")
    mode = {"precompiled": "pre-compiled with neuron_parallel_compile into a shared cache before the run",
            "shared": "a shared cache filled by the run itself",
            "local": "each instance's local cache (a replacement instance starts empty)"}[p.inputs["cache"]]
    out.append(("table", pd.DataFrame([
        ("compile cache", mode),
        ("distinct graphs (assumed)", f"{p.inputs['n_graphs']}"),
        ("compile time per graph (assumed)", format_seconds(p.inputs["compile_s"])),
        ("pre-compilation on one instance", format_seconds(r["precompile_s"])),
        ("first launch: the whole job waits", format_seconds(r["cold_start_s"])),
        ("each restart waits for recompiles", format_seconds(r["restart_compile_s"])),
    ], columns=["quantity", "value"])))

    h2("Wall time and cost")
    w = p.wall_time_table()
    out.append(("table", pd.DataFrame({"part": w["part"], "days": [f"{d:,.2f}" for d in w["days"]],
                                       "share": [f"{s:.2%}" for s in w["share"]]})))
    ct = p.cost_table()
    out.append(("table", pd.DataFrame({"part": ct["part"],
                                       "instance-hours": [f"{h:,.1f}" for h in ct["instance_hours"]],
                                       "cost": [money(u) for u in ct["usd"]]})))
    para(f"**{p.days:,.1f} days** wall clock; **{r['instance_hours']:,.0f} instance-hours** × "
         f"{p.usd_per_hour:,.2f} USD = **{money(r['cost_usd'])}**; **{r['cost_per_million_tokens_usd']:,.3f} USD "
         f"per million trained tokens**. Price: {p.price_basis}.")

    h2("Sensitivity")
    s = p.sensitivity
    out.append(("table", pd.DataFrame({
        "input": [_INPUT_NAMES.get(i, i) for i in s["input"]],
        "low": [fmt_value(v, _UNITS[i]) for v, i in zip(s["low_value"], s["input"])],
        "high": [fmt_value(v, _UNITS[i]) for v, i in zip(s["high_value"], s["input"])],
        "cost at low": [money(c) for c in s["cost_low_usd"]],
        "cost at high": [money(c) for c in s["cost_high_usd"]],
        "days at low": [f"{d:,.1f}" for d in s["days_low"]],
        "days at high": [f"{d:,.1f}" for d in s["days_high"]],
        "swing": [money(c) for c in s["swing_usd"]]})))
    para(f"The largest uncertainty is **{_INPUT_NAMES.get(s['input'].iloc[0], s['input'].iloc[0])}**: "
         f"moving it over its range moves the cost by {money(s['swing_usd'].iloc[0])}. The layout is kept "
         "fixed while MFU moves.")

    h2("Launch environment")
    out.append(("code", launch_script(p)))
    env = planning.launch_environment(p)
    out.append(("table", env[["name", "value", "sets", "source"]]))

    h2("Pre-flight checklist")
    checks = planning.preflight_checks(p)
    out.append(("olist", [f"**{c.step}** — `{c.command}` — expect: {c.expect}" for c in checks.itertuples()]))

    h2("What this plan leaves out")
    out.append(("list", list(planning.IGNORED) + [f"(layout model) {x}" for x in layouts.IGNORED]))

    h2("Sources")
    out.append(("list", _sources(p)))
    return out


_UNITS = {"mfu": "fraction", "usd_per_hour": "USD/hour", "chip_mtbf_s": "s",
          "checkpoint_write_bytes_per_s": "bytes/s", "restart_s": "s", "compile_s": "s"}


def _sources(p: planning.RunPlan) -> list[str]:
    ids = ["aws-lnc", "aws-neuron-caching", "aws-nrt-config", "aws-jax-neuronx-envvars", "aws-nccom-test",
           "aws-neuron-ls", "aws-neuron-parallel-compile", "meta-llama3-table5"]
    src = specs.read_data_csv("sources.csv").set_index("source_id")
    lines = [f"{src.loc[i, 'title']} — {src.loc[i, 'reference']}" for i in ids if i in src.index]
    if p.price_basis.startswith("sourced"):
        pr = planning.price(p.instance_type, p.inputs["purchase_option"])
        lines.append(f"{pr.source} — {pr.reference}")
    lines += [f"{s}" for s in p.model.sources]
    lines.append("Young 1974 (CACM 17(9)) and Daly 2006 (FGCS 22(3)): checkpoint interval; Narayanan et al. "
                 "2021 (arXiv:2104.04473) and Korthikanti et al. 2022 (arXiv:2205.05198): layout model; "
                 "Rajbhandari et al. 2020 (arXiv:1910.02054): training state")
    return lines


# --------------------------------------------------------------------------- renderers


def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _md_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(_md_cell(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def to_markdown(plan: planning.RunPlan) -> str:
    """The plan as a Markdown document (GitHub-flavoured tables)."""
    parts = []
    for kind, content in blocks(plan):
        if kind == "h1":
            parts.append(f"# {content}")
        elif kind == "h2":
            parts.append(f"## {content}")
        elif kind == "p":
            parts.append(content)
        elif kind == "table":
            parts.append(_md_table(content))
        elif kind == "code":
            parts.append(f"```bash\n{content}\n```")
        elif kind == "list":
            parts.append("\n".join(f"- {item}" for item in content))
        elif kind == "olist":
            parts.append("\n".join(f"{i}. {item}" for i, item in enumerate(content, 1)))
    return "\n\n".join(parts) + "\n"


def inline_html(text: str) -> str:
    """Escape, then the two inline marks the document uses: **bold** and `code`."""
    out, bold, code = [], False, False
    i = 0
    esc = html.escape(str(text))
    while i < len(esc):
        if esc.startswith("**", i) and not code:
            out.append("</b>" if bold else "<b>")
            bold = not bold
            i += 2
        elif esc[i] == "`":
            out.append("</code>" if code else "<code>")
            code = not code
            i += 1
        else:
            out.append(esc[i])
            i += 1
    return "".join(out)


def to_html(plan: planning.RunPlan) -> str:
    """The plan as a self-contained HTML page (no scripts, no external resources)."""
    body = []
    title = ""
    for kind, content in blocks(plan):
        if kind == "h1":
            title = str(content)
            body.append(f"<h1>{html.escape(title)}</h1>")
        elif kind == "h2":
            body.append(f"<h2>{html.escape(content)}</h2>")
        elif kind == "p":
            body.append(f"<p>{inline_html(content)}</p>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in content.columns)
            rows = "".join("<tr>" + "".join(f"<td>{inline_html(v)}</td>" for v in row) + "</tr>"
                           for row in content.itertuples(index=False))
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif kind == "code":
            body.append(f"<pre><code>{html.escape(content)}</code></pre>")
        elif kind in ("list", "olist"):
            tag = "ul" if kind == "list" else "ol"
            items = "".join(f"<li>{inline_html(x)}</li>" for x in content)
            body.append(f"<{tag}>{items}</{tag}>")
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:left;vertical-align:top}pre{background:#f4f4f4;padding:0.5em;overflow-x:auto}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{style}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
