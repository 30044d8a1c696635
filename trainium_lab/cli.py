"""The course's calculators from a terminal: ``python -m trainium_lab <command>``.

Commands
--------
``sizing``     training state, chips, FLOPs and instance-days of a job (:mod:`trainium_lab.sizing`)
``allreduce``  time of a ring collective, with algorithm and bus bandwidth
               (:mod:`trainium_lab.collectives`)
``young``      checkpoint interval by Young, Daly and the exact optimum, and the time each loses
               (:mod:`trainium_lab.reliability`)
``specs``      sourced hardware facts (:mod:`trainium_lab.specs`)
``plan``       a training run end to end: layout, days, failures, compiles, dollars
               (:mod:`trainium_lab.planning`), as a table, ``--json`` or a ``--markdown`` document
``compare``    the same job on Trainium and on the comparison GPUs, cost per trained token

Quantities carry their units on the command line (``--size 1GiB``, ``--bandwidth 25GB/s``,
``--checkpoint 90s --mtbf 24h``, ``--params 70B``) and in the output. Output is a readable table,
or JSON in base units (bytes, seconds, FLOPs, bytes/s) with ``--json``. Bad input exits with
status 2 and one line on stderr; nothing here prints a traceback.

Reading quantities with units is :mod:`trainium_lab.units` (``parse_bytes``, ``parse_seconds``...,
re-exported here); the tables and JSON are made here; the models stay pure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Callable, Sequence

from trainium_lab import units
from trainium_lab.units import (parse_bytes, parse_count, parse_fraction, parse_rate,
                                parse_seconds, parse_usd_per_hour)

__all__ = ["main", "parse_bytes", "parse_rate", "parse_seconds", "parse_count", "parse_fraction",
           "parse_usd_per_hour", "CliError"]

PROG = "python -m trainium_lab"


class CliError(ValueError):
    """Bad input on the command line: reported as one line, exit status 2.

    A ``ValueError``, like the errors of the unit parsers and of the models.
    """


def _integer(text: str, what: str) -> int:
    value = parse_count(text, what)
    if value != int(value):
        raise CliError(f"{what}: must be a whole number, got {text!r}")
    return int(value)


# --------------------------------------------------------------------------- output

def _fmt_count(x: float) -> str:
    return f"{units.format_count(x)} ({x:.3g})" if abs(x) >= 1e6 else f"{x:,.0f}"


def _bytes_both(x: float) -> str:
    return f"{units.format_bytes(x, digits=2)} ({units.format_bytes(x, binary=False, digits=2)})"


def _table(title: str, rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    lines = [title, "-" * max(len(title), 20)]
    lines += [f"{k:<{width}}  {v}" for k, v in rows]
    return "\n".join(lines)


def _emit(args: argparse.Namespace, title: str, rows: Sequence[tuple[str, str]],
          data: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(_finite({"command": args.command, **data}), indent=2, default=_json_default,
                         allow_nan=False))
    else:
        print(_table(title, rows))


def _usd3(x: float) -> str:
    """Dollars to three significant figures: a plan's cost is a range, not a figure to the dollar."""
    if not x < float("inf"):
        return "never finishes"
    for div, suffix in ((1e9, " B USD"), (1e6, " M USD"), (1e3, " k USD")):
        if abs(x) >= div:
            return f"{x / div:,.3g}{suffix}"
    return f"{x:,.0f} USD"


def _pair(text: str, flag: str, parse: Callable[[str, str], float]) -> tuple[float, float]:
    """``LOW,HIGH`` (or ``LOW-HIGH`` for plain numbers) as two parsed values."""
    parts = [t.strip() for t in str(text).split(",")]
    if len(parts) != 2 or not all(parts):
        raise CliError(f"{flag}: write LOW,HIGH, e.g. 30%,45%; got {text!r}")
    return parse(parts[0], flag), parse(parts[1], flag)


#: the flag that sets each model parameter, so an error names what the user typed
_FLAG_OF = {
    "n_tokens": "--tokens", "n_params": "--params", "n_active_params": "--active-params",
    "deadline_s": "--deadline", "n_systems": "--systems", "max_systems": "--max-systems",
    "usd_per_hour": "--price", "usd_per_chip_hour": "--price-per-chip", "mfu": "--mfu",
    "mfu_range": "--mfu-range", "usd_per_hour_range": "--price-range", "chip_mtbf_range_s": "--chip-mtbf-range",
    "other_costs_usd": "--other-cost", "chip_mtbf_s": "--chip-mtbf", "restart_s": "--restart",
    "compile_s": "--compile", "n_graphs": "--graphs", "cache": "--cache", "global_batch": "--global-batch",
    "framework": "--framework",
    "recipe_name": "--recipe", "recipe": "--recipe", "dtype": "--dtype", "lnc": "--lnc", "system": "--system",
    "model": "--model", "preset": "--model", "purchase_option": "--option", "checkpoint_write_bytes_per_s": "--checkpoint-bandwidth",
    "checkpoint_bytes_per_s_per_chip": "--checkpoint-bandwidth-per-chip",
    "storage_bytes_per_s": "--storage-bandwidth", "snapshot_s": "--snapshot", "checkpoint_mode": "--checkpoint-mode",
    "checkpoint_storage": "--checkpoint-storage",
    "zero_stage": "--zero", "activation_share": "--activation-share", "bytes_per_param": "--bytes-per-param",
    "grad_bytes_per_param": "--grad-bytes", "n_instances": "--instances", "checkpoint_s": "--checkpoint",
    "mtbf_s": "--mtbf", "unit_mtbf_s": "--mtbf", "n_units": "--units", "size_bytes": "--size",
    "bandwidth_bytes_per_s": "--bandwidth", "latency_s": "--latency", "n": "--ranks", "collective": "--collective",
    "n_layers": "--layers", "d_model": "--d-model", "n_heads": "--heads", "n_kv_heads": "--kv-heads",
    "ffn_dim": "--ffn", "vocab_size": "--vocab", "seq_len": "--seq-len", "n_experts": "--experts",
    "experts_per_token": "--experts-per-token", "expert_ffn_dim": "--expert-ffn",
    "n_shared_experts": "--shared-experts", "n_dense_layers": "--dense-layers", "entity": "specs NAME",
    "link": "--link", "reference": "--reference",
}

#: quantities a command derives from several flags: what the message says instead of the name
_DERIVED = {
    "flops": ("--tokens", "the training work 6 × --params × --tokens", "FLOPs",
              "the course computes with less than 1e+30 FLOPs: check --params and --tokens"),
    "wall_s": ("--tokens", "the run's wall-clock time", "s",
               "the planner computes runs shorter than 1e+18 s (31.7 billion years): fewer --tokens or more "
               "--systems"),
}


def _flagged(message: str, argv: Sequence[str] = (), args: argparse.Namespace | None = None) -> str:
    """A model's error in the user's words: the parameter it names replaced by the flag that sets
    it (wherever it appears), a value the user typed echoed as typed, not in base units."""
    m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(?=[:\s])", message)
    if m and m.group(1) in _DERIVED:
        flag, what, unit, advice = _DERIVED[m.group(1)]
        got = re.search(r"got (\S+?)\.?$", message)
        value = f" would be {float(got.group(1)):.3g} {unit}" if got else " is out of range"
        return f"{flag}: {what}{value}; {advice}"
    if m and m.group(1) in _FLAG_OF:
        message = _FLAG_OF[m.group(1)] + message[m.end(1):]
    for name in sorted((n for n in _FLAG_OF if "_" in n), key=len, reverse=True):
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", _FLAG_OF[name], message)
    message = message.replace("(or None for its default)", "(or leave the flag out for its default)")
    message = re.sub(r"has no dense_flops_per_s for (\S+);", r"has no published dense peak rate on \1;", message)
    if args is not None and getattr(args, "command", None) == "plan" and args.global_batch is None:
        gb = re.match(r"^--global-batch \((\d+)\) (.*)$", message)
        if gb:  # the user gave no --global-batch: blame what they gave, and say where 2048 came from
            message = (f"--systems: the model's published global batch ({gb.group(1)} sequences, the default "
                       f"of --global-batch) {gb.group(2)}; use fewer --systems or give --global-batch")
    no_layout = re.match(r"^(?:--)?framework: (.* can run no layout .*)$", message)
    if no_layout and "--framework" not in argv and "--systems" in argv:
        # the default framework was not the user's choice: blame the count they gave
        message = (f"--systems: {no_layout.group(1)}; use another --systems, give --global-batch, or "
                   "--framework any (the teaching search)")
    heads = re.match(r"^--d-model must be a multiple of --heads, got (\d+) and (\d+)$", message)
    if heads:
        message = (f"--heads: {heads.group(2)} attention heads must divide --d-model ({heads.group(1)}) evenly; "
                   "change --heads or --d-model")
    lead = re.match(r"^(--[a-z][a-z-]*)", message)
    if lead and lead.group(1) in argv:
        i = list(argv).index(lead.group(1))
        typed = argv[i + 1] if i + 1 < len(argv) else None
        got = re.search(r"got ([-+]?[\d.]+(?:e[-+]?\d+)?)\.?$", message)
        if typed is not None and got and got.group(1) != typed:
            message = message[:got.start(1)] + repr(typed) + message[got.end(1):]
    return message


def _finite(obj: Any) -> Any:
    """JSON has no infinity or NaN: write them as null."""
    if isinstance(obj, float) and not (obj == obj and abs(obj) != float("inf")):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            return _finite(obj.item())
        except (TypeError, ValueError):
            return obj
    return obj


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    return str(obj)


# --------------------------------------------------------------------------- commands

def _cmd_sizing(args: argparse.Namespace) -> None:
    from trainium_lab import sizing, specs

    model = sizing.preset(args.model) if args.model else None
    if args.params is None and model is None:
        raise CliError("sizing: give --params (e.g. 70B) or --model (e.g. llama3-70b)")
    n_params = parse_count(args.params, "--params") if args.params is not None else model.n_params
    if args.params is not None and model is not None and abs(n_params - model.n_params) > 1e-9 * model.n_params:
        raise CliError(f"sizing: --params {args.params} is not the {model.name}'s {_fmt_count(model.n_params)} "
                       "parameters; give one of them (--model sets the shape and the parameters)")
    active = None if args.active_params is None else parse_count(args.active_params, "--active-params")
    n_tokens = parse_count(args.tokens, "--tokens")
    mfu = None if args.mfu is None else parse_fraction(args.mfu, "--mfu")
    share = parse_fraction(args.activation_share, "--activation-share")
    bpp = None if args.bytes_per_param is None else float(
        parse_count(args.bytes_per_param, "--bytes-per-param"))
    grad = None if args.grad_bytes is None else float(parse_count(args.grad_bytes, "--grad-bytes"))
    if bpp is not None and grad is not None:
        raise CliError("sizing: --bytes-per-param is a total that already includes the gradients; "
                       "give it or --grad-bytes, not both")
    job = sizing.size_job(n_params, n_tokens, system=args.system, recipe_name=args.recipe,
                           bytes_per_param=bpp, zero_stage=args.zero, activation_share=share,
                           mfu=mfu, dtype=args.dtype, model=model, grad_bytes_per_param=grad,
                           n_active_params=active)
    system = specs.system(job.system)
    r = sizing.recipe(job.recipe, job.grad_bytes_per_param)
    per_chip = job.state_bytes_per_chip
    instances = (args.instances if args.instances is not None else
                 None if job.min_systems is None else job.min_systems * system.n_instances)
    days = None if instances is None else job.days_on(instances)
    chip_name = system.chip.name
    rows = [
        ("model", f"{_fmt_count(n_params)} parameters" + (f" ({model.name})" if model else "")),
        ("active parameters (per token)", _fmt_count(job.active_params)
         + (" (all: a dense model)" if job.n_active_params is None else " (mixture of experts)")),
        ("tokens", _fmt_count(n_tokens)),
        ("system", f"{job.system} ({system.n_chips} × {chip_name})"),
        ("recipe", f"{job.recipe}" + (f", {bpp:g} bytes/param" if bpp else
                                       f", {r.gradients:g}-byte gradients, {r.bytes_per_param:g} bytes/param")),
        ("training state", _bytes_both(job.state_bytes)),
        ("usable HBM per chip", f"{units.format_bytes(job.usable_bytes_per_chip, digits=1)} "
                                f"(keeping {share:.0%} for activations)"),
        (f"min chips (ZeRO-{job.zero_stage})",
         "never fits (shard more: higher --zero)" if job.min_chips is None
         else f"{job.min_chips}"),
    ]
    if per_chip is not None:
        rows.append(("state per chip at min chips", units.format_bytes(per_chip, digits=1)))
    rows += [
        (f"min {job.system}", "-" if job.min_systems is None else f"{job.min_systems}"),
        ("training FLOPs (6 × N_active × D)", units.format_flops(job.flops)),
        ("MFU assumed", f"{job.mfu:.0%}"),
        ("instance-days", f"{job.instance_days:,.1f}"),
    ]
    if days is not None:
        rows.append((f"days on {instances} instance{'s' if instances != 1 else ''}",
                     f"{days:,.2f}"))
    if job.activation_bytes_per_chip is not None:
        rows.append(("activations (1 micro-batch, no TP/PP, no recompute)",
                     units.format_bytes(job.activation_bytes_per_chip, digits=1)))
    data = {
        "inputs": {"n_params": n_params, "n_active_params": job.active_params, "n_tokens": n_tokens,
                   "system": job.system,
                   "recipe": job.recipe, "bytes_per_param": bpp,
                   "grad_bytes_per_param": job.grad_bytes_per_param, "zero_stage": job.zero_stage,
                   "mfu": job.mfu, "activation_share": share, "dtype": args.dtype,
                   "model": model.key if model else None},
        "results": {"state_bytes": job.state_bytes,
                    "usable_bytes_per_chip": job.usable_bytes_per_chip,
                    "min_chips": job.min_chips, "state_bytes_per_chip": per_chip,
                    "min_systems": job.min_systems, "flops": job.flops,
                    "instance_days": job.instance_days, "n_instances": instances,
                    "days": days, "activation_bytes_per_chip": job.activation_bytes_per_chip},
    }
    _emit(args, "Sizing a training job (trainium_lab.sizing)", rows, data)


def _cmd_allreduce(args: argparse.Namespace) -> None:
    from trainium_lab import collectives, specs

    size = parse_bytes(args.size, "--size")
    link = specs.link(args.link) if args.link is not None else None
    if args.bandwidth is None and link is None:
        raise CliError("allreduce: give --bandwidth (e.g. 25GB/s) or --link (e.g. trn2-efa)")
    bandwidth = parse_rate(args.bandwidth, "--bandwidth") if args.bandwidth is not None else link.bytes_per_s
    if args.latency is not None:
        latency = parse_seconds(args.latency, "--latency")
    else:
        latency = link.latency_s if link is not None and link.latency_s is not None else 0.0
    n = _integer(args.ranks, "--ranks")
    t = collectives.collective_s(args.collective, size, n, bandwidth, latency)
    algbw = collectives.algbw_bytes_per_s(size, t) if t > 0 else None
    busbw = collectives.busbw_bytes_per_s(size, t, n, args.collective) if t > 0 else None
    rows = [
        ("collective", f"{args.collective} (ring)"),
        ("size per rank", _bytes_both(size)),
        ("ranks", f"{n}"),
        ("bandwidth per rank", units.format_bandwidth(bandwidth)
         + (f" (from {link.key}: {link.scope}, direction {link.direction})" if link and args.bandwidth is None
            else "")),
        ("latency per step", units.format_seconds(latency) if latency else "0 (ignored)"),
        ("time", units.format_seconds(t)),
        ("algorithm bandwidth", "-" if algbw is None else units.format_bandwidth(algbw)),
        ("bus bandwidth", "-" if busbw is None else units.format_bandwidth(busbw)),
    ]
    data = {"inputs": {"collective": args.collective, "size_bytes": size, "n": n,
                       "bandwidth_bytes_per_s": bandwidth, "latency_s": latency,
                       "link": link.key if link else None},
            "results": {"time_s": t, "algbw_bytes_per_s": algbw, "busbw_bytes_per_s": busbw}}
    _emit(args, "Ring collective cost (trainium_lab.collectives)", rows, data)


def _cmd_young(args: argparse.Namespace) -> None:
    from trainium_lab import reliability

    ckpt = parse_seconds(args.checkpoint, "--checkpoint")
    mtbf = parse_seconds(args.mtbf, "--mtbf")
    restart = parse_seconds(args.restart, "--restart")
    for flag, value, text in (("--mtbf", mtbf, args.mtbf), ("--checkpoint", ckpt, args.checkpoint)):
        if value <= 0:  # before comparing them, so that the message blames the flag that is wrong
            raise CliError(f"{flag} must be a duration > 0, e.g. {'24h' if flag == '--mtbf' else '90s'}; "
                           f"got {text!r}")
    if args.units is not None:
        n_units = _integer(args.units, "--units")
        job_mtbf = reliability.job_mtbf_s(mtbf, n_units)
    else:
        n_units, job_mtbf = None, mtbf
    if ckpt >= job_mtbf:
        raise CliError(f"--checkpoint: a checkpoint ({units.format_seconds(ckpt)}) as long as the job MTBF "
                       f"({units.format_seconds(job_mtbf)}) or longer never saves the work: the job fails "
                       "before it finishes one; write it faster or use fewer --units")
    young = reliability.young_interval_s(ckpt, job_mtbf)
    daly = reliability.daly_interval_s(ckpt, job_mtbf)
    best = reliability.optimal_interval_s(ckpt, job_mtbf)
    lost = {name: float(reliability.lost_fraction(t, ckpt, job_mtbf, restart))
            for name, t in (("young", young), ("daly", daly), ("optimal", best))}
    rows = [("checkpoint (blocking)", units.format_seconds(ckpt))]
    if n_units is not None:
        rows += [("MTBF per unit", units.format_seconds(mtbf)), ("units", f"{n_units:,}")]
    rows += [
        ("job MTBF", units.format_seconds(job_mtbf)),
        ("restart", units.format_seconds(restart) if restart else "0 (ignored)"),
        ("Young interval √(2δM)", f"{units.format_seconds(young)}  (loses {lost['young']:.2%})"),
        ("Daly interval", f"{units.format_seconds(daly)}  (loses {lost['daly']:.2%})"),
        ("exact optimum", f"{units.format_seconds(best)}  (loses {lost['optimal']:.2%})"),
    ]
    if ckpt > 0.1 * job_mtbf:
        _warn(f"the checkpoint is {ckpt / job_mtbf:.0%} of the job MTBF: Young's √(2δM) assumes δ ≪ M, "
              "so trust only the exact optimum")
    data = {"inputs": {"checkpoint_s": ckpt, "mtbf_s": mtbf, "n_units": n_units,
                       "restart_s": restart},
            "results": {"job_mtbf_s": job_mtbf, "young_interval_s": young,
                        "daly_interval_s": daly, "optimal_interval_s": best,
                        "lost_fraction": lost}}
    _emit(args, "Checkpoint interval (trainium_lab.reliability)", rows, data)


def _cmd_specs(args: argparse.Namespace) -> None:
    from trainium_lab import specs

    if args.entity is None:
        groups = {"chips": [c.key for c in specs.chips()],
                  "systems": [s.key for s in specs.systems()],
                  "links": [lk.key for lk in specs.links()],
                  "accelerators": [a.key for a in specs.accelerators()]}
        if args.json:
            print(json.dumps({"command": "specs", "entities": groups}, indent=2))
        else:
            print(_table("Entities with sourced facts (python -m trainium_lab specs NAME)",
                         [(k, ", ".join(v)) for k, v in groups.items()]))
        return
    try:
        df = specs.facts(entity=args.entity)
    except KeyError:
        known = sorted(specs.facts()["entity"].unique())
        raise CliError(f"specs NAME: {args.entity!r} is not in data/; one of {', '.join(known)}") from None
    if args.field is not None:
        fields = list(dict.fromkeys(df["field"]))
        df = df[df["field"] == args.field]
        if df.empty:
            raise CliError(f"--field: {args.entity!r} has no field {args.field!r}; one of {', '.join(fields)}")
    if not args.all:
        df = df[df["status"] == "used"]
    if args.json:  # base units, like every --json; the value as the source writes it beside
        facts = [{"field": r.field, **_base_units(r.value, r.unit),
                  "as_written": r.value if r.unit in ("text", "list") else f"{r.value} {r.unit}".strip(),
                  "status": r.status, "source": r.source, "reference": r.reference, "note": r.note}
                 for r in df.itertuples()]
        print(json.dumps({"command": "specs", "entity": args.entity, "facts": facts}, indent=2))
        return
    rows = [(r.field, f"{r.value} {r.unit}".strip() + f"  [{r.status}; {r.source}]")
            for r in df.itertuples()]
    print(_table(f"{args.entity}: sourced facts (data/, read by trainium_lab.specs)", rows))


#: the base unit of each unit ``data/`` writes (specs.UNIT_FACTORS converts the values)
_BASE_UNIT = {"count": "count", "TFLOPS": "FLOP/s", "PFLOPS": "FLOP/s", "KiB": "bytes", "MiB": "bytes",
              "GiB": "bytes", "GB": "bytes", "TB/s": "bytes/s", "GB/s": "bytes/s", "GiB/s": "bytes/s",
              "Gbps": "bytes/s", "GHz": "Hz", "us": "s", "USD/hour": "USD/hour"}


def _base_units(value: str, unit: str) -> dict[str, Any]:
    """``{"value": number in base units, "unit": base unit}`` (``specs.Fact.base_value``'s
    conversion); text and lists stay as written."""
    from trainium_lab import specs

    if unit in _BASE_UNIT:
        base = specs.Fact("", "", value, unit, "", "", "", "", "", "").base_value
        return {"value": base, "unit": _BASE_UNIT[unit]}
    return {"value": value, "unit": unit}


def _framework_row(plan) -> str:
    """The framework the plan was made for, or those that can run its layout."""
    from trainium_lab import frameworks

    key = plan.inputs.get("framework")
    if key:
        return plan.framework_text  # name, status since release, overlap schedule and its flags
    who = frameworks.layout_runnable_by(plan.layout)
    return ("teaching search (--framework any): " + (("runnable by " + ", ".join(who)) if who
                                                       else "no Neuron framework runs it"))


_SHAPE_FLAGS = {"layers": "n_layers", "d_model": "d_model", "heads": "n_heads", "kv_heads": "n_kv_heads",
                "ffn": "ffn_dim", "vocab": "vocab_size", "seq_len": "seq_len"}
_MOE_FLAGS = {"experts": "n_experts", "experts_per_token": "experts_per_token",
              "expert_ffn": "expert_ffn_dim", "shared_experts": "n_shared_experts",
              "dense_layers": "n_dense_layers"}


def _model(args: argparse.Namespace):
    """``--model``: a preset, or with ``--layers`` (and the other shape flags) a model of your own
    named by ``--model``; with ``--experts`` a mixture of experts."""
    from trainium_lab import layouts, moe, sizing

    given = {v: _integer(getattr(args, k), "--" + k.replace("_", "-"))
             for k, v in {**_SHAPE_FLAGS, **_MOE_FLAGS}.items() if getattr(args, k, None) is not None}
    if not given:
        if args.model not in {p.key for p in sizing.presets("all")}:
            raise CliError(f"--model: {args.model!r} is not a preset (one of {_presets_text()}); a model of "
                           "your own needs --layers, --d-model and --heads")
        return sizing.preset(args.model)
    flag_of = {v: "--" + k.replace("_", "-") for k, v in {**_SHAPE_FLAGS, **_MOE_FLAGS}.items()}
    missing = [flag_of[k] for k in ("n_layers", "d_model", "n_heads") if k not in given]
    if missing:  # blame the shape flag the user gave, and say what else it needs
        raise CliError(f"{flag_of[next(iter(given))]}: a shape flag describes a model of your own (named by "
                       f"--model), which needs --layers, --d-model and --heads; missing {', '.join(missing)}")
    moe_given = {k: v for k, v in given.items() if k in _MOE_FLAGS.values()}
    if moe_given:
        for k in ("n_experts", "experts_per_token", "expert_ffn_dim"):
            if k not in moe_given:
                flag = next(f for f, v in _MOE_FLAGS.items() if v == k)
                raise CliError(f"--{flag.replace('_', '-')}: a mixture of experts needs --experts, "
                               "--experts-per-token and --expert-ffn")
        return moe.custom_moe_model(args.model, **given)
    return layouts.custom_model(args.model, **given)


def _add_model_flags(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--model", required=required,
                   help=f"a preset ({_presets_text()}), or the name of your own model given by --layers, "
                        "--d-model, --heads (and --kv-heads, --ffn, --vocab, --seq-len; MoE: --experts, "
                        "--experts-per-token, --expert-ffn, --shared-experts, --dense-layers)")
    shape = p.add_argument_group("a model of your own (with --model NAME)")
    for flag, what in (("layers", "transformer layers"), ("d-model", "hidden size"),
                       ("heads", "attention heads"), ("kv-heads", "key/value heads (default: --heads)"),
                       ("ffn", "MLP inner size (default 4 × --d-model)"), ("vocab", "vocabulary size"),
                       ("seq-len", "training sequence length"), ("experts", "routed experts per MoE layer"),
                       ("experts-per-token", "experts per token (top-k)"), ("expert-ffn", "width of one expert"),
                       ("shared-experts", "shared experts (default 0)"),
                       ("dense-layers", "dense layers before the MoE layers (default 0)")):
        shape.add_argument("--" + flag, help=what)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _cmd_plan(args: argparse.Namespace) -> None:
    from trainium_lab import planning

    model = _model(args)
    if args.systems is not None and args.deadline is not None:
        raise CliError("plan: give --systems or --deadline, not both")
    if args.snapshot is not None and args.checkpoint_mode != "async":
        raise CliError("--snapshot applies only to an asynchronous checkpoint: add --checkpoint-mode async")
    if args.checkpoint_mode == "async" and args.snapshot is None:
        raise CliError("--checkpoint-mode async needs --snapshot (the blocking copy to host memory, e.g. 5s)")
    if args.price is not None and args.price_per_chip is not None:
        raise CliError("--price-per-chip: give --price (per instance-hour) or --price-per-chip, not both")

    def given(flag: str, parse):  # the flag's parsed value, or None when it was not given
        text = getattr(args, flag.replace("-", "_"))
        return None if text is None else parse(text, "--" + flag)

    # the plan's specs are built here, once, from the flags (planning.plan's pipeline does the rest)
    job = planning.Job(
        model, parse_count(args.tokens, "--tokens"), deadline_s=given("deadline", parse_seconds),
        global_batch=given("global-batch", _integer), recipe_name=args.recipe,
        # an FP8 recipe's matmuls run at the FP8 peak unless --dtype says otherwise
        dtype=args.dtype or ("fp8" if str(args.recipe).startswith("fp8") else "bfloat16"))
    cluster = planning.ClusterSpec(
        args.system, n_systems=given("systems", _integer), lnc=given("lnc", _integer),
        max_systems=given("max-systems", _integer), framework=args.framework)
    execution = planning.Execution(mfu=given("mfu", parse_fraction),
                                   mfu_range=given("mfu-range", lambda t, f: _pair(t, f, parse_fraction)))
    reliability = planning.ReliabilitySpec(
        checkpoint_write_bytes_per_s=given("checkpoint-bandwidth", parse_rate),
        checkpoint_bytes_per_s_per_chip=given("checkpoint-bandwidth-per-chip", parse_rate),
        storage_bytes_per_s=given("storage-bandwidth", parse_rate), checkpoint_mode=args.checkpoint_mode,
        checkpoint_storage=args.checkpoint_storage, snapshot_s=given("snapshot", parse_seconds),
        chip_mtbf_s=given("chip-mtbf", parse_seconds),
        chip_mtbf_range_s=given("chip-mtbf-range", lambda t, f: _pair(t, f, parse_seconds)),
        restart_s=parse_seconds(args.restart, "--restart"))
    compilation = planning.CompilationSpec(compile_s=parse_seconds(args.compile, "--compile"),
                                           n_graphs=_integer(args.graphs, "--graphs"), cache=args.cache)
    cost = planning.CostSpec(
        usd_per_hour=given("price", parse_usd_per_hour), usd_per_chip_hour=given("price-per-chip", parse_usd_per_hour),
        purchase_option=args.option,
        usd_per_hour_range=given("price-range", lambda t, f: _pair(t, f, parse_usd_per_hour)),
        # NAME=USD, NAME one of planning.OTHER_COSTS (the model names a wrong one)
        other_costs_usd=_assignments(args.other_cost, "--other-cost", parse_count) if args.other_cost else None)
    try:
        plan = planning.plan(job, cluster, execution, reliability, compilation, cost)
    except ValueError as exc:
        message = str(exc).splitlines()[0]
        if message.startswith("usd_per_hour:"):
            raise CliError("--price" + message[len("usd_per_hour"):].replace(
                "as an input (an assumption)", "with --price or --price-per-chip (an assumption)")) from None
        raise
    r0 = plan.results
    if r0["lost_fraction"] > 0.5:
        _warn(f"the plan loses {r0['lost_fraction']:.0%} of its time to failures and checkpoints (job MTBF "
              f"{units.format_seconds(r0['job_mtbf_s'])}, checkpoint {units.format_seconds(r0['checkpoint_cost_s'])}, "
              "restart {}): check --chip-mtbf, --restart and the checkpoint bandwidth".format(
                  units.format_seconds(r0["restart_total_s"])))
    elif r0["checkpoint_cost_s"] > 0.1 * r0["job_mtbf_s"]:
        _warn(f"a checkpoint ({units.format_seconds(r0['checkpoint_cost_s'])}) takes over a tenth of the job MTBF "
              f"({units.format_seconds(r0['job_mtbf_s'])}): Young's interval is far from its optimum's assumptions")
    if args.markdown:
        from trainium_lab.views.planning import to_markdown

        print(to_markdown(plan), end="")
        return
    r = plan.results
    est = plan.estimate
    rows = [
        ("model", f"{plan.model.name} ({_fmt_count(plan.model.n_params)} parameters"
                  + (f", {_fmt_count(plan.sizing.active_params)} active per token)" if plan.sizing.n_active_params
                     else ")")),
        ("tokens", _fmt_count(plan.n_tokens)),
        ("cluster", f"{plan.n_systems} × {plan.system} = {plan.n_chips} chips, {plan.n_instances} "
                    f"instance{'s' if plan.n_instances != 1 else ''} of {plan.instance_type}, LNC={plan.lnc}"),
        ("layout", plan.layout.label()),
        ("framework", _framework_row(plan)),
        ("global batch", f"{plan.inputs['global_batch']:,} sequences ({plan.inputs['global_batch_basis']})"),
        ("MFU while computing", f"{plan.inputs['mfu']:.1%} ({plan.inputs['mfu_basis']})"),
        ("memory per chip", f"{units.format_bytes(est.total_bytes)} of {units.format_bytes(est.hbm_bytes)}"),
        ("step", f"{units.format_seconds(est.step_s)}, {est.tokens_per_s:,.0f} tokens/s "
                 f"(effective MFU {est.mfu_effective:.1%})"),
        ("training time (no losses)", units.format_seconds(r["compute_s"])),
        ("job MTBF", units.format_seconds(r["job_mtbf_s"])),
        ("checkpoint", f"{units.format_bytes(r['checkpoint_bytes'], binary=False)} every "
                       f"{units.format_seconds(r['checkpoint_interval_s'])}"),
        ("time lost (checkpoints, rework, restarts)", f"{r['lost_fraction']:.2%}"),
        ("first-launch compiles", units.format_seconds(r["cold_start_s"])),
        ("wall clock", f"{plan.days:,.2f} days"),
        ("range (MFU, failures, price)", f"{r['days_low']:,.1f}-{r['days_high']:,.1f} days"),
        ("billed", f"{plan.n_instances} × {plan.inputs['billing_unit']} ({plan.inputs['chips_per_instance']} "
                   f"chips each), {plan.inputs['purchase_option']}: {r['billed_instance_hours']:,.1f} "
                   f"instance-hours" + (f" ({plan.billing.note})" if plan.billing.note else "")),
        ("price per instance-hour", f"{plan.usd_per_hour:,.2f} USD = {plan.inputs['usd_per_chip_hour']:,.3f} USD "
                                    f"per chip-hour ({plan.price_basis})"),
        ("cost", f"{_usd3(r['cost_usd'])} (range {_usd3(r['cost_low_usd'])} to {_usd3(r['cost_high_usd'])})"),
        ("other costs (spares, storage, data, evaluation, debugging)",
         f"{r['other_costs_usd']:,.0f} USD (given with --other-cost; total {_usd3(r['total_cost_usd'])})"),
        ("cost per million tokens", f"{r['cost_per_million_tokens_usd']:,.4f} USD"),
        ("largest uncertainty", _FLAG_OF.get(str(plan.sensitivity["input"].iloc[0]),
                                             str(plan.sensitivity["input"].iloc[0]))),
    ]
    if plan.systems_tried:
        rows.append(("count search", f"exact: {len(plan.systems_tried)} counts planned, {plan.systems_bounded} "
                                     "ruled out by the state and perfect-scaling floors"))
    if plan.deadline_s is not None:
        rows.append(("deadline", plan.deadline_text))
    data = {
        "inputs": {"model": plan.model.key, "n_params": plan.model.n_params, "n_tokens": plan.n_tokens,
                   "system": plan.system, "n_systems": plan.n_systems, "lnc": plan.lnc,
                   "deadline_s": plan.deadline_s, "price_basis": plan.price_basis,
                   "n_active_params": plan.sizing.active_params,
                   "assumptions": list(plan.assumptions),
                   **{k: v for k, v in plan.inputs.items()}},
        "layout": {"tp": plan.layout.tp, "pp": plan.layout.pp, "dp": plan.layout.dp, "ep": plan.layout.ep,
                   "zero_stage": plan.layout.zero_stage, "micro_batch": plan.layout.micro_batch,
                   "n_micro_batches": plan.layout.n_micro_batches, "recompute": plan.layout.recompute,
                   "label": plan.layout.label(), "levels": dict(est.levels)},
        "results": {"n_chips": plan.n_chips, "n_instances": plan.n_instances,
                    "memory_bytes_per_chip": dict(est.memory_bytes), "hbm_bytes": est.hbm_bytes,
                    "step_s": est.step_s, "tokens_per_s": est.tokens_per_s, "days": plan.days,
                    **dict(r), "sizing": {"state_bytes": plan.sizing.state_bytes,
                                          "min_chips": plan.sizing.min_chips,
                                          "instance_days": plan.sizing.instance_days}},
        "billing": {"unit": plan.inputs["billing_unit"], "chips_per_instance": plan.inputs["chips_per_instance"],
                    "n_instances": plan.n_instances, "purchase_option": plan.inputs["purchase_option"],
                    "n_purchases": plan.billing.n_purchases, "days_per_purchase": list(plan.billing.days_per_purchase),
                    "instances_per_purchase": list(plan.billing.instances_per_purchase), "note": plan.billing.note},
        "search": {"systems_tried": list(plan.systems_tried), "systems_bounded": plan.systems_bounded},
        "sensitivity": plan.sensitivity.to_dict(orient="records"),
    }
    if plan.deadline_s is not None:
        alt = plan.deadline_alternative
        data["deadline"] = {"verdict": plan.deadline_verdict, "text": plan.deadline_text, "alternative": None if alt is None else {
            "system": alt.system, "n_systems": alt.n_systems, "n_chips": alt.n_chips, "layout": alt.layout.label(),
            "framework": alt.framework, "verdict": alt.deadline_verdict, "days": alt.days}}
    _emit(args, "Training plan (trainium_lab.planning)", rows, data)


def _assignments(items: Sequence[str] | None, flag: str, parse: Callable[[str, str], float]) -> dict[str, float]:
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"{flag}: write NAME=VALUE, got {item!r}")
        out[name.strip()] = parse(value, flag)
    return out


def _split_assignments(items: Sequence[str] | None) -> list[tuple[str, str]]:
    return [(n.strip(), v) for n, _, v in (item.partition("=") for item in items or ())]


def _cmd_compare(args: argparse.Namespace) -> None:
    from trainium_lab import planning, sizing

    model = _model(args)
    n_tokens = parse_count(args.tokens, "--tokens")
    # default: the calibrated MFU (data/calibration.csv, planner_mfu; fitted on AWS's Trn1 runs)
    mfu = sizing.default_mfu() if args.mfu is None else parse_fraction(args.mfu, "--mfu")
    names = planning.platforms().platform.tolist()
    per = _assignments(args.platform_mfu, "--platform-mfu", parse_fraction)
    prices = _assignments(args.price_per_chip, "--price-per-chip", parse_usd_per_hour)
    for name, value in per.items():
        if not 0 < value <= 1:
            raise CliError(f"--platform-mfu {name}={dict(_split_assignments(args.platform_mfu))[name]}: an MFU "
                           "must be above 0 and at most 100% (or 1)")
    for name in (*per, *prices):
        if name not in names:
            raise CliError(f"--platform-mfu/--price-per-chip: unknown platform {name!r}; one of {', '.join(names)}")
    if args.reference not in names:
        raise CliError(f"--reference: unknown platform {args.reference!r}; one of {', '.join(names)}")
    active = float(getattr(model, "n_active_params", 0.0) or 0.0) or float(model.n_params)
    table = planning.compare_platforms(active, n_tokens, {n: per.get(n, mfu) for n in names},
                                       prices or None, purchase_option=args.option, reference=args.reference)
    rows = []
    for r in table.itertuples():
        cost = "no price: give --price-per-chip" if r.cost_usd != r.cost_usd else (
            f"{_usd3(r.cost_usd)}, {r.cost_per_million_tokens_usd:,.3f} USD per million tokens")
        rows.append((f"{r.platform} ({r.accelerator_name})",
                     f"MFU {r.mfu:.0%}: {r.chip_hours:,.0f} chip-hours; " + cost
                     + ("" if r.parity_usd_per_chip_hour != r.parity_usd_per_chip_hour
                        else f"; equal cost per token at {r.parity_usd_per_chip_hour:,.2f} USD per chip-hour")))
    data = {"inputs": {"model": model.key, "n_params": float(model.n_params), "n_active_params": active,
                       "n_tokens": n_tokens, "mfu": {n: per.get(n, mfu) for n in names},
                       "purchase_option": args.option, "reference": args.reference},
            "platforms": table.to_dict(orient="records")}
    _emit(args, f"The same job on every platform: {model.name}, {_fmt_count(n_tokens)} tokens, 6 × "
                f"{_fmt_count(active)} active parameters × D (trainium_lab.planning.compare_platforms)",
          rows, data)


# --------------------------------------------------------------------------- argument parser

class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2.

    Values that start with a minus sign and a digit (``--params -5B``) are read as values, so
    the model can say what is wrong with them, not argparse that an argument is missing.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str):  # type: ignore[override]
        raise CliError(f"{self.prog}: {message} (see --help)")


def _systems_text() -> str:
    """Every Trainium system of ``data/systems.csv``, for the help texts."""
    from trainium_lab import specs

    return ", ".join(sy.key for sy in specs.systems())


def _presets_text() -> str:
    """Every model preset of ``data/model_presets.csv``, for the help texts."""
    from trainium_lab import sizing

    return ", ".join(p.key for p in sizing.presets("all"))


#: the one place --json's units are said (the parser's description repeats it once)
JSON_HELP = "print JSON in base units (bytes, s, FLOPs, FLOP/s, bytes/s, USD) instead of a table"


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _command(sub: Any, name: str, func: Callable[[argparse.Namespace], None], *, help: str,
             description: str, epilog: str) -> argparse.ArgumentParser:
    """Declare a sub-command: its one-line help, a description and examples printed as written,
    and the function that runs it."""
    p = sub.add_parser(name, help=help, description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser (sub-commands sizing, allreduce, young, specs, plan)."""
    parser = _Parser(
        prog=PROG, description="Trainium Lab's calculators from a terminal. Every number "
        "about hardware comes from the course's sourced data (trainium_lab.specs). Every command's "
        "--json prints base units: bytes, s, FLOPs, FLOP/s, bytes/s, USD; a fraction (MFU) as 0.4.",
        epilog="Examples:\n"
               f"  {PROG} sizing --params 70B --tokens 2T --system trn2.48xlarge --mfu 40%\n"
               f"  {PROG} allreduce --size 1GiB --ranks 16 --bandwidth 25GB/s\n"
               f"  {PROG} young --checkpoint 90s --mtbf 24h\n"
               f"  {PROG} specs trn2\n"
               f"  {PROG} plan --model llama3-8b --tokens 100B --systems 1 --price 40",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from trainium_lab import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} (trainium_lab) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = _command(sub, "sizing", _cmd_sizing, help="training state, chips, FLOPs and instance-days",
                 description="Size a training job (chapter 04): state bytes, fewest chips "
                 "and systems, FLOPs (6ND) and instance-days at an assumed MFU.",
                 epilog=f"Example: {PROG} sizing --params 8B --tokens 1T --mfu 40%")
    p.add_argument("--params", help="parameters, e.g. 70B, 405e9 (default: the --model's)")
    p.add_argument("--model", help=f"a published shape: {_presets_text()}")
    p.add_argument("--active-params", help="parameters one token uses, for the FLOPs (default: the "
                   "--model's published active count for a mixture of experts, else --params)")
    p.add_argument("--tokens", required=True, help="training tokens, e.g. 2T, 15.6T")
    p.add_argument("--system", default="trn2.48xlarge",
                   help="trn1.32xlarge, trn2.48xlarge, trn2-ultraserver, ... (default %(default)s)")
    p.add_argument("--recipe", default="bf16-adam", help="precision recipe (default %(default)s)")
    p.add_argument("--bytes-per-param", help="override the recipe's bytes per parameter, e.g. 16")
    p.add_argument("--grad-bytes",
                   help="bytes per gradient value. Default 2: BF16 gradients, the course's "
                   "convention, as the ZeRO paper counts mixed-precision Adam (2 + 2 + 12 = 16 "
                   "bytes/param). Use 4 for FP32 gradients, the convention of Megatron-LM's "
                   "theoretical memory report and DeepSpeed's ZeRO estimators (18 bytes/param), "
                   "to compare with their numbers")
    p.add_argument("--zero", type=int, default=3, choices=range(4), metavar="{0,1,2,3}",
                   help="ZeRO stage (default %(default)s: fully sharded, the lower bound)")
    p.add_argument("--mfu", default=None, help="model FLOPs utilisation, e.g. 40%% or 0.4 "
                   "(default: the calibrated value, fitted on AWS's Trn1 training runs)")
    p.add_argument("--activation-share", default="35%",
                   help="share of HBM kept for activations (default %(default)s)")
    p.add_argument("--dtype", default="bfloat16",
                   help="number format of the peak rate: bfloat16 (bf16), fp8, fp32... (default %(default)s)")
    p.add_argument("--instances", type=int,
                   help="report days on this many instances (default: the minimum)")
    _add_json(p)

    p = _command(sub, "allreduce", _cmd_allreduce, help="ring all-reduce (or other collective) time",
                 description="Time of a ring collective (chapter 03): "
                 "2(n−1)/n · S/B + 2(n−1)·α for all-reduce, with algorithm and bus "
                 "bandwidth as nccl-tests and the Neuron nccom-test define them "
                 "(nccom-test prints them in GiB/s under a \"GB/s\" label).",
                 epilog=f"Example: {PROG} allreduce --size 1GiB --ranks 16 --bandwidth 25GB/s")
    p.add_argument("--size", required=True, help="bytes per rank, e.g. 1GiB, 256MB")
    p.add_argument("--ranks", required=True, help="participants, e.g. 16")
    p.add_argument("--bandwidth", help="per-rank bandwidth, e.g. 25GB/s, 400Gbps")
    p.add_argument("--link", help="take bandwidth (and latency if known) from a sourced link, "
                   "e.g. trn2-neuronlink-intra, trn2-efa")
    p.add_argument("--latency", help="per-step latency, e.g. 10us (default 0 or the link's)")
    p.add_argument("--collective", default="all_reduce",
                   help="all_reduce, reduce_scatter, all_gather, all_to_all (default %(default)s)")
    _add_json(p)

    p = _command(sub, "young", _cmd_young, help="checkpoint interval (Young, Daly, exact optimum)",
                 description="How often to checkpoint (chapter 06): Young's √(2δM), "
                 "Daly's higher-order interval and the exact optimum, with the share of "
                 "time each loses to checkpoints and rework.",
                 epilog=f"Example: {PROG} young --checkpoint 90s --mtbf 24h")
    p.add_argument("--checkpoint", required=True, help="blocking checkpoint time, e.g. 90s")
    p.add_argument("--mtbf", required=True,
                   help="job MTBF, e.g. 24h (or per unit, with --units)")
    p.add_argument("--units", help="the MTBF is per unit; the job has this many units")
    p.add_argument("--restart", default="0s", help="restart time, e.g. 10min (default 0s)")
    _add_json(p)

    p = _command(sub, "specs", _cmd_specs, help="sourced hardware facts (chips, systems, links)",
                 description="Look up sourced facts in data/: every value with its unit, "
                 "status and source. Without a name, list the names.",
                 epilog=f"Examples: {PROG} specs trn2 ; {PROG} specs trn2 --field "
                 "hbm_bytes_per_s --all")
    p.add_argument("entity", nargs="?", help="trn2, trn2.48xlarge, trn2-efa, h100, ...")
    p.add_argument("--field", help="only this field, e.g. hbm_bytes")
    p.add_argument("--all", action="store_true",
                   help="also show 'alternative' values other AWS pages give")
    _add_json(p)

    p = _command(sub, "plan", _cmd_plan,
                 help="plan a training run: layout, days, failures, compiles, dollars",
                 description="Plan a training run end to end (chapter 11): the planner's layout "
                 "(chapter 05), days with failure, checkpoint and compile losses (chapters 06, 07), "
                 "instance-hours and cost, with a sensitivity table. Give --systems, or --deadline, "
                 "or neither (the fewest systems that fit). Trn2 and Trn3 have no sourced price: "
                 "give --price (an assumption), or the cost is a labelled parity placeholder.",
                 epilog=f"Example: {PROG} plan --model llama3-405b --tokens 1T --system trn2-ultraserver "
                 "--deadline 60d --price 40 --global-batch 2048 --json")
    _add_model_flags(p)
    p.add_argument("--tokens", required=True, help="training tokens, e.g. 100B, 1T")
    p.add_argument("--system", default="trn2.48xlarge",
                   help=f"{_systems_text()} (default %(default)s)")
    p.add_argument("--systems", help="how many systems (instances or UltraServers)")
    p.add_argument("--deadline", help="wall-clock deadline, e.g. 60d; chooses --systems")
    p.add_argument("--lnc", help="logical NeuronCore setting, 1 or 2 (default: the chip's)")
    p.add_argument("--price", help="USD per hour of one billed instance: trn1.32xlarge, trn2.48xlarge and "
                                   "trn2u.48xlarge (a quarter of a Trn2 UltraServer) hold 16 chips, a Trn3 Gen1 "
                                   "server 16, a Trn3 Gen2 server 4; e.g. 40 (default: the sourced price, if any)")
    p.add_argument("--price-per-chip", help="USD per chip-hour instead of --price, e.g. 4.64")
    p.add_argument("--mfu-range", help="low,high MFU for the plan's range, e.g. 30%%,45%% "
                                       "(default: --mfu × 0.75 and × 1.25)")
    p.add_argument("--price-range", help="low,high price per instance-hour for the range (default: × 0.75, × 1.25)")
    p.add_argument("--chip-mtbf-range", help="low,high chip MTBF for the range (default: × 0.5, × 2)")
    p.add_argument("--other-cost", action="append", metavar="NAME=USD",
                   help="a cost outside the instance-hours, repeatable: spares, storage, data pipeline, "
                        "evaluation or debugging runs, e.g. --other-cost storage=20000 (each 0 unless given)")
    p.add_argument("--option", default="on-demand", choices=["on-demand", "capacity-block", "ri-effective"],
                   help="purchase option, billed under its terms: on-demand hourly; capacity-block 1-182 days, "
                        "64 instances per block, 256 in all; ri-effective whole 1-year terms "
                        "(default %(default)s)")
    p.add_argument("--mfu", default=None, help="MFU while computing, e.g. 40%% (default: the calibrated "
                   "value, fitted on AWS's Trn1 training runs)")
    p.add_argument("--checkpoint-bandwidth",
                   help="checkpoint write bandwidth of the whole job, e.g. 1TB/s (default: "
                        "--checkpoint-bandwidth-per-chip × chips, up to --storage-bandwidth)")
    p.add_argument("--checkpoint-bandwidth-per-chip",
                   help="checkpoint write bandwidth per chip (default: Meta's Llama 3 storage per GPU, "
                        "2 TB/s over 16,384 GPUs = 122MB/s)")
    p.add_argument("--storage-bandwidth",
                   help="limit of the checkpoint storage (default: the largest FSx for Lustre file system "
                        "HyperPod creates at the top tier, 100.8GB/s)")
    p.add_argument("--checkpoint-storage", default="fsx", choices=["fsx", "s3"],
                   help="storage behind the default limit: fsx, the largest FSx for Lustre file system HyperPod "
                        "creates (100.8GB/s); s3, Amazon S3's guaranteed 3,500 PUT/s per prefix × 5 MiB parts, one prefix "
                        "per instance, which grows with the job (default %(default)s)")
    p.add_argument("--checkpoint-mode", default="sync", choices=["sync", "async"],
                   help="sync: training waits for the write; async: only for --snapshot, the copy to "
                        "host memory, then the upload runs behind training (default %(default)s)")
    p.add_argument("--snapshot", help="blocking copy of the state to host memory with --checkpoint-mode "
                                      "async, e.g. 5s (an assumption)")
    p.add_argument("--max-systems", help="largest count --deadline (or the fewest that fit) considers "
                                         "(default: 100,000 chips' worth)")
    p.add_argument("--chip-mtbf", help="MTBF of one chip, e.g. 2000d (default: the Llama 3 per-GPU proxy)")
    p.add_argument("--restart", default="10min", help="restart time before the reload (default %(default)s)")
    p.add_argument("--compile", default="20min", help="compile time per graph (default %(default)s)")
    p.add_argument("--graphs", default="2", help="distinct graphs the run compiles (default %(default)s)")
    p.add_argument("--cache", default="precompiled", choices=["precompiled", "shared", "local"],
                   help="compile cache (default %(default)s)")
    p.add_argument("--global-batch", default=None, help="sequences per step (default: the model's published "
                   "batch for the phase that trains most of --tokens, data/batch_schedules.csv; else 1024)")
    p.add_argument("--recipe", help="precision recipe (default: the --framework's, else bf16-adam)")
    p.add_argument("--framework", choices=["torchneuron", "nxd", "jax", "any"],
                   help="plan only what this training framework can run, with its recipe, checkpoints and "
                        "overlap schedule (default: the best of the frameworks current on the cited SDK; "
                        "'any': the teaching search, every layout, no framework checked)")
    p.add_argument("--dtype", help="number format of the matmuls, bf16 or fp8 (default: fp8 for an "
                                   "fp8-... recipe, else bf16)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help=JSON_HELP)
    out.add_argument("--markdown", action="store_true",
                     help="print the plan as a Markdown document (the capacity-request attachment)")

    p = _command(sub, "compare", _cmd_compare, help="the same job on Trainium and the comparison GPUs",
                 description="The same training job on every platform the course knows (chapter 11): "
                 "accelerator-hours = 6 × N_active × D / (peak × MFU), cost = accelerator-hours × price per "
                 "accelerator-hour (the sourced instance price ÷ its accelerators, or --price-per-chip). "
                 "Perfect scaling on all alike; every MFU is an input.",
                 epilog=f"Example: {PROG} compare --model llama3-70b --tokens 2T --mfu 40% "
                 "--price-per-chip trn2.48xlarge=4.64")
    _add_model_flags(p)
    p.add_argument("--tokens", required=True, help="training tokens, e.g. 2T")
    p.add_argument("--mfu", default=None, help="MFU on every platform, e.g. 40%% (default: the calibrated "
                   "planner MFU of data/calibration.csv, fitted on AWS's Trn1 runs; an assumption elsewhere)")
    p.add_argument("--platform-mfu", action="append", metavar="PLATFORM=MFU",
                   help="an MFU for one platform, repeatable, e.g. p5.48xlarge=35%%")
    p.add_argument("--price-per-chip", action="append", metavar="PLATFORM=USD",
                   help="USD per accelerator-hour for a platform (repeatable); Trainium has no sourced price")
    p.add_argument("--option", default="on-demand", choices=["on-demand", "capacity-block", "ri-effective"],
                   help="which sourced prices to use (default %(default)s)")
    p.add_argument("--reference", help="a priced platform: adds the price per chip-hour at which each costs "
                                       "the same per token (default p5.48xlarge)", default="p5.48xlarge")
    _add_json(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 bad input, 1 internal error)."""
    parser = build_parser()
    args = None
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version print and stop
            return int(exc.code or 0) if not isinstance(exc.code, str) else 2
        if args.command is None:
            parser.print_help()
            return 2
        func: Callable[[argparse.Namespace], None] = args.func
        func(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # the models' validation: names the parameter (here: its flag) and its range
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {_flagged(message, list(sys.argv[1:] if argv is None else argv), args)}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - promise: never a traceback
        print(f"internal error ({type(exc).__name__}): {str(exc).splitlines()[0] if str(exc) else ''}"
              " - please report it", file=sys.stderr)
        return 1
    return 0
