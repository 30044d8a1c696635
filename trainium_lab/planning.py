"""Planning a run end to end: layout, days, failures, compiles, dollars.

Every earlier chapter answers one question. This module answers them together for one job and
turns the answer into money, by composing the chapters' own functions — it re-derives none of
their formulas:

* **sizing** (chapter 04, :mod:`trainium_lab.sizing`): training state, fewest chips, FLOPs and
  instance-days at an assumed MFU;
* **the planner** (chapter 05, :mod:`trainium_lab.layouts`): the fastest layout that fits, its
  memory per chip and its step time;
* **compile cold starts** (chapter 07, :mod:`trainium_lab.compilation`): what the first launch and
  every restart wait for compiles, with a shared, a per-instance or a pre-warmed cache;
* **failures and checkpoints** (chapter 06, :mod:`trainium_lab.reliability`): job MTBF from the
  chips and instances held, the optimum checkpoint interval and the expected time lost to
  checkpoint writes, rework and restarts;
* **serving** (chapter 09, :mod:`trainium_lab.serving`): replicas for a throughput target under
  latency limits.

Public API
----------
``plan_run(model, n_tokens, *, system, n_systems | deadline_s, mfu, usd_per_hour, ...) -> RunPlan``
    The training plan: layout, memory per chip, step time, wall-clock days with the goodput
    losses, instance-hours, cost, cost per million trained tokens, and a sensitivity table
    (which input moves the cost most).
``plan_serving(model, target_tokens_per_s, ...) -> ServingPlan``
    The inference counterpart: chips for a throughput and latency target, cost per million
    generated tokens.
``compare_platforms(n_params, n_tokens, mfu={...}, usd_per_chip_hour={...}) -> DataFrame``
    The same job on Trainium systems and GPU instances as cost per trained token, with one
    formula for all (6ND over peak × MFU): every MFU is an input, none is assumed for you.
``check_price_claim(claim_id, ...) -> ClaimCheck``
    What a published price-performance claim implies, and whether the data can test it.
``prices()``, ``price(instance, purchase_option)``
    Sourced instance-hour prices with their dates (``data/prices.csv``).
``launch_environment(plan)``, ``preflight_checks(plan)``, ``trainium_checklist(plan, ...)``
    The launch environment a plan implies (variables named as the Neuron documentation names
    them), the checks to run before the real run, and a "when to choose Trainium" checklist.

Numbers with no public source — MFU, prices of Trn2 and Trn3, checkpoint write bandwidth,
restart and compile times — are inputs; every plan lists which of its inputs are assumptions.
What the model leaves out is in :data:`IGNORED`. The Markdown and HTML export is in
:mod:`trainium_lab.views.planning` (prose and layout stay out of the model).

References
----------
Chapters' sources, as each composed function cites them. Young (1974) and Daly (2006) for the
checkpoint interval; Narayanan et al. 2021 (arXiv:2104.04473) and Korthikanti et al. 2022
(arXiv:2205.05198) for the layout model; AWS Neuron documentation for the compile cache,
``neuron_parallel_compile``, LNC, the runtime's environment variables, ``neuron-ls`` and
``nccom-test`` (``data/launch_env.csv``); AWS pricing pages and the Neuron repository's price
table for prices (``data/prices.csv``).

Examples
--------
>>> p = plan_run("llama3-8b", 1e11, system="trn2.48xlarge", n_systems=1, usd_per_hour=40.0)
>>> p.layout.tp * p.layout.pp * p.layout.dp == p.layout.cluster.n_ranks, p.days > p.sizing.instance_days
(True, True)
>>> round(p.cost_usd) == round(p.instance_hours * 40.0)
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from trainium_lab import (compilation, collectives, cores, dtypes, frameworks, layouts, moe, reliability,
                          serving, sizing, specs)
from trainium_lab import topology
from trainium_lab.layouts.planner import _admits_batch, _max_systems_splitting
from trainium_lab._validate import (choice, in_range, instance, integer,
                                    positive, sequence)
from trainium_lab.sizing import ModelPreset
from trainium_lab.units import GB, GiB, day, format_seconds, hour, minute

__all__ = [
    "CAPSTONE_405B_RUN", "capstone_405b_plan",
    "PURCHASE_OPTIONS", "CACHE_MODES", "CHECKPOINT_STORAGES", "MAX_CHIPS", "DEFAULTS", "SENSITIVITY", "IGNORED", "BILLED_INSTANCE",
    "Price", "prices", "price", "billed_instance", "purchase_terms", "Billing", "bill", "OTHER_COSTS",
    "billing_unit", "default_checkpoint_bytes_per_s_per_chip", "default_storage_bytes_per_s",
    "checkpoint_write_bytes_per_s",
    "Calibration", "llama3_calibration", "platforms", "parity_usd_per_hour",
    "RunPlan", "plan_run", "plan", "Job", "ClusterSpec", "Execution", "ReliabilitySpec", "CompilationSpec",
    "CostSpec", "TEACHING_SEARCH", "checkpoint_bytes", "default_global_batch", "batch_schedule",
    "ServingPlan", "plan_serving",
    "compare_platforms", "ClaimCheck", "price_claims", "check_price_claim",
    "launch_environment", "preflight_checks", "trainium_checklist",
]

#: purchase options that ``data/prices.csv`` can hold
PURCHASE_OPTIONS: tuple[str, ...] = ("on-demand", "capacity-block", "ri-effective")
#: how compiled graphs reach the instances: pre-compiled into a shared cache before the run
#: (``neuron_parallel_compile``), a shared cache filled by the run itself, or each instance's
#: local cache (a replacement instance starts empty)
CACHE_MODES: tuple[str, ...] = ("precompiled", "shared", "local")

#: defaults of inputs that no public source gives; every plan labels them assumptions.
#: MFU is the calibrated default (``sizing.default_mfu``, fitted on AWS's Trn1 runs); 20 min per compile
#: and the 10 min restart are chapters 07's and 06's examples. The checkpoint bandwidth is not here: it
#: scales with the job, from sourced figures (:func:`checkpoint_write_bytes_per_s`)
class _Defaults(dict):
    """The assumed inputs; ``"mfu"`` is the calibrated default, read when first asked for."""

    def __missing__(self, key):
        if key == "mfu":
            return sizing.default_mfu()
        raise KeyError(key)


DEFAULTS: dict[str, float] = _Defaults({
    "restart_s": 10 * minute,
    "compile_s": 20 * minute,
    "n_graphs": 2,
    "precompile_workers": 4,
})

#: the global batch of a model with no published schedule (:func:`default_global_batch`): an assumption
_FALLBACK_GLOBAL_BATCH = 1024

#: how far each uncertain input is moved in the sensitivity table: (low factor, high factor).
#: MFU and price are known to within tens of per cent once measured or quoted; failure rates,
#: storage bandwidth, restart and compile times are often off by a factor of two
SENSITIVITY: dict[str, tuple[float, float]] = {
    "mfu": (0.75, 1.25),
    "usd_per_hour": (0.75, 1.25),
    "chip_mtbf_s": (0.5, 2.0),
    "checkpoint_write_bytes_per_s": (0.5, 2.0),
    "restart_s": (0.5, 2.0),
    "compile_s": (0.5, 2.0),
}

#: checkpoint storage the planner models: FSx for Lustre (a limit: the largest file system AWS has
#: shown) or Amazon S3 (a floor that grows with the prefixes written, one per instance)
CHECKPOINT_STORAGES: tuple[str, ...] = ("fsx", "s3")

#: cost line items outside the instance-hours, zero unless given (``plan_run(other_costs_usd=...)``)
OTHER_COSTS: tuple[str, ...] = ("spares", "storage", "data pipeline", "evaluation", "debugging runs")

#: the EC2 instance type a system's instances are billed as, where it differs from the system key
BILLED_INSTANCE: dict[str, str] = {"trn2-ultraserver": "trn2u.48xlarge"}

#: what the plan leaves out (the notebook discusses each)
IGNORED: tuple[str, ...] = (
    "everything chapter 05's layout model leaves out (layouts.IGNORED): the step time is "
    "first-order, one MFU for every kernel",
    "perfect weak scaling of the data loader, the optimizer step and evaluation; no stragglers",
    "failures during a restart or a checkpoint read; a replacement instance is always available",
    "checkpoint reads at the write bandwidth; an asynchronous upload's extra rework when a failure "
    "strikes mid-upload (chapter 06)",
    "graphs a neuron_parallel_compile trial run does not reach: 'precompiled' assumes it reaches "
    "every graph of the run",
    "costs outside the instance-hours (spares, storage, data pipeline, evaluation, debugging runs, "
    "data transfer, engineering time) unless given as line items: they are zero by default",
    "price changes during the run; whether capacity is free when wanted (Capacity Block start "
    "dates, quotas); UltraServer Capacity Blocks' own limits (the instance limits are applied)",
)

_SECONDS_PER_HOUR = hour

#: chips the default ``max_systems`` of :func:`plan_run` reaches (chapter 10's largest clusters)
MAX_CHIPS = 100_000


# --------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Price:
    """One sourced instance-hour price (a row of ``data/prices.csv``).

    Attributes
    ----------
    instance, purchase_option, region, date : str
    usd_per_hour : float
        Price of one instance for one hour.
    accelerator : str
        Chip or accelerator key (``specs.chip`` / ``specs.accelerator``).
    n_accelerators : int
        Accelerators in one instance, as the price source lists them.
    status, source_id, source, reference, tier, note : str
    """

    instance: str
    purchase_option: str
    region: str
    usd_per_hour: float
    date: str
    accelerator: str
    n_accelerators: int
    status: str
    source_id: str
    source: str
    reference: str
    tier: str
    note: str

    @property
    def usd_per_accelerator_hour(self) -> float:
        """``usd_per_hour / n_accelerators``: what AWS's Capacity Blocks page calls the
        effective accelerator hourly rate."""
        return self.usd_per_hour / self.n_accelerators

    def _repr_markdown_(self) -> str:
        return (f"**{self.instance}** ({self.purchase_option}, {self.region}, {self.date}): "
                f"**{self.usd_per_hour:,.2f} USD/h**, {self.usd_per_accelerator_hour:,.3f} USD per "
                f"accelerator-hour — {self.source} (tier {self.tier})")


@functools.cache
def _price_table() -> pd.DataFrame:
    df = specs.read_data_csv("prices.csv")
    tiers = specs.read_data_csv("sources.csv").set_index("source_id")["tier"]
    df["tier"] = [tiers[s] for s in df["source_id"]]
    df["usd_per_hour"] = df["usd_per_hour"].astype(float)
    df["n_accelerators"] = df["n_accelerators"].astype(int)
    return df


def prices(instance: str | None = None, purchase_option: str | None = None) -> pd.DataFrame:
    """Sourced instance-hour prices, ``used`` and ``alternative`` rows, with their sources.

    Parameters
    ----------
    instance : str, optional
        Keep one instance type (``"trn1.32xlarge"``, ``"p5.48xlarge"``...).
    purchase_option : {"on-demand", "capacity-block", "ri-effective"}, optional

    Returns
    -------
    pandas.DataFrame
        The columns of ``data/prices.csv`` plus ``source``, ``reference`` and ``tier``.

    Examples
    --------
    >>> prices("trn1.32xlarge")[["purchase_option", "usd_per_hour", "date", "status"]].values.tolist()[0]
    ['on-demand', 21.5, '2023-02-27', 'used']
    """
    df = _price_table()
    if instance is not None:
        instance = choice("instance", instance, tuple(dict.fromkeys(df["instance"])))
        df = df[df["instance"] == instance]
    if purchase_option is not None:
        purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
        df = df[df["purchase_option"] == purchase_option]
    return df.reset_index(drop=True)


def price(instance: str, purchase_option: str = "on-demand") -> Price:
    """The ``used`` sourced price of one instance type and purchase option.

    Raises
    ------
    ValueError
        When the course has no sourced price for that pair (Trn2, Trn2 UltraServers and Trn3
        have none): the message says to pass the price as an input, labelled an assumption.

    Examples
    --------
    >>> p = price("p5.48xlarge")
    >>> p.usd_per_hour, p.region, p.date, p.usd_per_accelerator_hour
    (55.04, 'us-east-1', '2026-08-26', 6.88)
    >>> price("trn2.48xlarge")
    Traceback (most recent call last):
    ...
    ValueError: instance: no sourced on-demand price for 'trn2.48xlarge' in data/prices.csv; give the price as an input (usd_per_hour), labelled an assumption
    """
    if not isinstance(instance, str) or not instance.strip():
        raise ValueError(f"instance must be an instance type such as 'p5.48xlarge', got {instance!r}")
    purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
    df = _price_table()
    rows = df[(df["instance"] == instance.strip()) & (df["purchase_option"] == purchase_option)
              & (df["status"] == "used")]
    if rows.empty:
        raise ValueError(
            f"instance: no sourced {purchase_option} price for {instance!r} in data/prices.csv; give "
            "the price as an input (usd_per_hour), labelled an assumption")
    r = rows.iloc[0]
    return Price(r.instance, r.purchase_option, r.region, float(r.usd_per_hour), r.date,
                 r.accelerator, int(r.n_accelerators), r.status, r.source_id, r.source, r.reference,
                 r.tier, r.note)


@functools.cache
def _terms_table() -> pd.DataFrame:
    df = specs.read_data_csv("purchase_terms.csv")
    for col in ("min_days", "max_days", "fine_step_days", "fine_until_days", "coarse_step_days",
                "max_instances_per_purchase", "max_instances_total"):
        df[col] = pd.to_numeric(df[col].replace("", np.nan)).astype(float)
    return df.set_index("purchase_option")


def purchase_terms() -> pd.DataFrame:
    """The terms of each purchase option (``data/purchase_terms.csv``): durations, instance limits.

    Examples
    --------
    >>> t = purchase_terms().set_index("purchase_option")
    >>> t.loc["capacity-block", ["min_days", "max_days", "max_instances_per_purchase", "max_instances_total"]].tolist()
    [1.0, 182.0, 64.0, 256.0]
    >>> float(t.loc["ri-effective", "min_days"])
    365.0
    """
    return _terms_table().reset_index()


@dataclass(frozen=True)
class Billing:
    """How a run is bought under a purchase option's terms (:func:`bill`).

    Attributes
    ----------
    purchase_option : str
    n_purchases : int
        Purchases (Capacity Blocks, reserved terms) the run needs; 0 for on-demand.
    days_per_purchase : tuple of float
        The durations bought, one per consecutive purchase (all instances alike).
    instances_per_purchase : tuple of int
        How the instances are split across parallel purchases.
    billed_instance_hours : float
        What is paid for: at least the instance-hours used.
    note : str
        What the terms did to the plan (split, rounded up, billed for a whole term), or "".
    """

    purchase_option: str
    n_purchases: int
    days_per_purchase: tuple[float, ...]
    instances_per_purchase: tuple[int, ...]
    billed_instance_hours: float
    note: str


def _opt(row, col):
    v = row[col]
    return None if pd.isna(v) else float(v)


def bill(purchase_option: str, wall_s: float, n_instances: int) -> Billing:
    """Buy ``n_instances`` for ``wall_s`` seconds under the terms of ``purchase_option``.

    * **on-demand**: the instance-hours used.
    * **capacity-block**: blocks of at most the longest duration, run one after another, each
      rounded up to a duration AWS sells (1-day steps to 14 days, then 7-day steps to 182), and
      instances split into parallel blocks of at most 64; more than 256 instances across blocks is
      refused. Paid for whole blocks.
    * **ri-effective**: whole 365-day terms (the shorter of the terms the rate may mean).

    Raises
    ------
    ValueError
        Naming ``purchase_option`` when the plan cannot be bought that way.

    References
    ----------
    ``data/purchase_terms.csv``: Amazon EC2 User Guide, "Find and purchase Capacity Blocks" and
    "Reserved Instances".

    Examples
    --------
    >>> from trainium_lab.units import day
    >>> b = bill("capacity-block", 543 * day, 1)   # the audit's 543-day trn1 run: three blocks
    >>> b.n_purchases, b.days_per_purchase
    (3, (182.0, 182.0, 182.0))
    >>> bill("ri-effective", 13.6 * day, 1).billed_instance_hours / 24
    365.0
    """
    purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
    wall_s = in_range("wall_s", wall_s, 0.0, 1e18, low_open=True)
    n_instances = integer("n_instances", n_instances, minimum=1, maximum=10**7)
    row = _terms_table().loc[purchase_option]
    used_h = n_instances * wall_s / _SECONDS_PER_HOUR
    days = wall_s / day
    if purchase_option == "on-demand":
        return Billing(purchase_option, 0, (), (n_instances,), used_h, "")
    per, total = _opt(row, "max_instances_per_purchase"), _opt(row, "max_instances_total")
    if total is not None and n_instances > total:
        raise ValueError(f"purchase_option: {purchase_option} holds at most {total:.0f} instances across "
                         f"purchases ({row.term}; {row.source_id}); this plan needs {n_instances}: use "
                         "on-demand or fewer systems")
    split = [n_instances] if per is None else \
        [int(per)] * (n_instances // int(per)) + ([n_instances % int(per)] if n_instances % int(per) else [])
    lo, hi = _opt(row, "min_days"), _opt(row, "max_days")
    if hi is None:  # whole terms of min_days
        n_terms = max(1, math.ceil(days / lo - 1e-12))
        durations = (lo,) * n_terms
        note = (f"billed for {n_terms} whole {lo:.0f}-day term{'s' if n_terms > 1 else ''} per instance "
                f"({row.term}): the run uses {days:,.1f} days")
    else:
        n_seq = max(1, math.ceil(days / hi - 1e-12))
        each = days / n_seq
        fine, until, coarse = (_opt(row, c) for c in ("fine_step_days", "fine_until_days", "coarse_step_days"))

        def sold(d: float) -> float:
            d = max(lo, d)
            if fine is None:
                return d
            if d <= until:
                return math.ceil(d / fine - 1e-9) * fine
            return min(hi, until + math.ceil((d - until) / coarse - 1e-9) * coarse)

        durations = tuple(sold(each) for _ in range(n_seq))
        parts = []
        if n_seq > 1:
            parts.append(f"split into {n_seq} consecutive purchases of {durations[0]:.0f} days (at most "
                         f"{hi:.0f} each)")
        if len(split) > 1:
            parts.append(f"{len(split)} parallel purchases of at most {per:.0f} instances")
        if sum(durations) > days + 1e-9:
            parts.append(f"{sum(durations):,.0f} days bought for {days:,.1f} used (durations sold in "
                         f"{fine:.0f}-day steps to {until:.0f} days, then {coarse:.0f}-day steps)")
        note = "; ".join(parts)
    billed = n_instances * sum(durations) * 24.0
    return Billing(purchase_option, len(durations) * len(split), durations, tuple(split), max(billed, used_h), note)


def billed_instance(system: str) -> tuple[str, int]:
    """The EC2 instance type a system is billed as, and how many of them it holds.

    A Trn2 UltraServer is four ``trn2u.48xlarge`` instances; an instance is one of itself.
    For Trn3 UltraServers the key of the system stands in (AWS's instance names for them are
    not in the course's sources).

    Examples
    --------
    >>> billed_instance("trn2-ultraserver"), billed_instance("trn2.48xlarge")
    (('trn2u.48xlarge', 4), ('trn2.48xlarge', 1))
    """
    s = specs.system(system)
    return BILLED_INSTANCE.get(s.key, s.key), s.n_instances


def billing_unit(system: str) -> tuple[str, int, bool]:
    """What one billed instance of ``system`` is: its name, its chips, and whether the name is an
    EC2 instance type (``False`` for Trn3, whose instance names are not in the course's sources).

    A price per instance-hour means a price per ``chips`` chip-hours: 16 on trn1.32xlarge,
    trn2.48xlarge and trn2u.48xlarge, and on a Trn3 Gen1 server, 4 on a Trn3 Gen2 server.

    Examples
    --------
    >>> billing_unit("trn2-ultraserver"), billing_unit("trn3-gen2-ultraserver")[1:]
    (('trn2u.48xlarge', 16, True), (4, False))
    """
    s = specs.system(system)
    name, per_system = billed_instance(s)
    chips = s.n_chips // per_system
    if name == s.key and s.n_instances > 1:
        return f"{s.key} server", chips, False
    return name, chips, True


@functools.cache
def _platforms() -> pd.DataFrame:
    rows = []
    for s in specs.systems():
        rows.append({"platform": s.key, "family": "Trainium", "accelerator": s.chip_key,
                     "accelerator_name": s.chip.name, "chips_per_platform": s.n_chips,
                     "billed_as": billed_instance(s.key)[0], "instances": s.n_instances})
    known = {a.key: a for a in specs.accelerators()}
    df = _price_table()
    for inst, g in df.groupby("instance", sort=False):
        acc = g["accelerator"].iloc[0]
        if acc in known:
            rows.append({"platform": inst, "family": "GPU", "accelerator": acc,
                         "accelerator_name": known[acc].name,
                         "chips_per_platform": int(g["n_accelerators"].iloc[0]),
                         "billed_as": inst, "instances": 1})
    return pd.DataFrame(rows)


def platforms() -> pd.DataFrame:
    """Platforms :func:`compare_platforms` knows: the Trainium systems of ``data/systems.csv``
    and the GPU instances with a sourced price.

    Returns
    -------
    pandas.DataFrame
        ``platform, family, accelerator, accelerator_name, chips_per_platform, billed_as,
        instances``.

    Examples
    --------
    >>> platforms().platform.tolist()[:3]
    ['trn1.32xlarge', 'trn2.48xlarge', 'trn2-ultraserver']
    """
    return _platforms().copy()


def parity_usd_per_hour(system: str, reference: str = "p5.48xlarge", purchase_option: str = "on-demand",
                        dtype: str = "bfloat16") -> float:
    """The hourly price of one billed instance of ``system`` that matches ``reference``'s sourced
    price per dense peak FLOP/s.

    ``price_ref × (chips × peak of one instance of system) / (chips × peak of reference)``: at
    equal MFU the two then cost the same per trained token. Where no price is published (Trn2,
    Trn3) this is a neutral, sourced-by-construction placeholder for an assumption — not a price.

    Examples
    --------
    >>> round(parity_usd_per_hour("trn2.48xlarge"), 2)   # 55.04 × 16 × 667 / (8 × 989)
    74.24
    """
    plats = _platforms().set_index("platform")
    key = system if isinstance(system, str) and system in plats.index else specs.system(system).key
    key = choice("system", key, tuple(plats.index))
    reference = choice("reference", reference, tuple(plats.index))
    ref = price(plats.loc[reference, "billed_as"], purchase_option)
    t, r = plats.loc[key], plats.loc[reference]
    per_instance = t.chips_per_platform / t.instances * _peak(t.accelerator, dtype)
    per_ref = r.chips_per_platform / r.instances * _peak(r.accelerator, dtype)
    return float(ref.usd_per_hour * per_instance / per_ref)


def _peak(accelerator: str, dtype: str) -> float:
    try:
        table = specs.chip(accelerator).dense_flops_per_s
    except ValueError:
        table = specs.accelerator(accelerator).dense_flops_per_s
    return table[dtype]


# --------------------------------------------------------------------------- the run plan


def checkpoint_bytes(n_params: float, recipe_name: str = "bf16-adam", *, framework: str | None = None) -> float:
    """Bytes one full checkpoint writes: the weights and the optimizer state, not the gradients.

    ``n_params × (weights + master copy + Adam moments)`` bytes per parameter of the recipe
    (chapter 04's :data:`trainium_lab.sizing.RECIPES`): what a restart needs to continue the
    optimisation; gradients are recomputed by the next step. With ``framework``, what that
    framework's checkpoints hold by default (:func:`trainium_lab.frameworks.checkpoint_bytes_per_param`:
    NxD leaves the FP32 master copy out, 10 bytes per parameter), when it documents them.

    >>> checkpoint_bytes(8e9, framework="nxd") / 8e9
    10.0

    References
    ----------
    Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054, section 3.1 (the state of mixed-precision
    Adam); PyTorch's ``state_dict`` checkpoints of model and optimizer.

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> checkpoint_bytes(8e9) / GB   # 8e9 × (2 + 4 + 4 + 4) bytes
    112.0
    """
    n_params = positive("n_params", n_params)
    fw = frameworks.resolve_framework(framework)
    if fw is not None and fw.checkpoint_components:
        return n_params * frameworks.checkpoint_bytes_per_param(fw)
    r = sizing.recipe(recipe_name)
    return n_params * (r.bytes_per_param - r.gradients)


def default_checkpoint_bytes_per_s_per_chip() -> float:
    """Checkpoint write bandwidth per chip the planner assumes: Meta's Llama 3 405B run's share.

    The sustained throughput of the run's storage (2 TB/s) over the 16,384 GPUs that shared it:
    about 122 MB/s per accelerator, a GPU-cluster proxy like the default chip MTBF (no
    Trainium figure is published).

    References
    ----------
    arXiv:2407.21783 §3.3.1 and Table 5 (:func:`trainium_lab.reliability.llama3_storage_bytes_per_s`,
    :func:`trainium_lab.reliability.llama3_summary`).

    Examples
    --------
    >>> from trainium_lab.units import MB
    >>> round(default_checkpoint_bytes_per_s_per_chip() / MB, 1)
    122.1
    """
    return reliability.llama3_storage_bytes_per_s() / reliability.llama3_summary().n_gpus


def default_storage_bytes_per_s() -> float:
    """The checkpoint storage limit the planner assumes: the largest FSx for Lustre file system a
    SageMaker HyperPod cluster creates (100,800 GiB) at the top Persistent-2 tier, about 100.8 GB/s.

    Chapter 06's model of the same storage (one home): :func:`trainium_lab.reliability.fsx_lustre_bytes_per_s`
    of :func:`trainium_lab.reliability.hyperpod_fsx_size_range_bytes`'s largest size at the top of
    :func:`trainium_lab.reliability.fsx_throughput_options_mb_per_s_per_tib`. A larger file system
    built outside HyperPod (AWS has shown 1.1 PiB, :func:`trainium_lab.reliability.fsx_demonstrated_bytes_per_s`)
    or S3 (``checkpoint_storage="s3"``) is a choice the plan must name (``storage_bytes_per_s``).

    References
    ----------
    Amazon SageMaker API Reference, ``FSxLustreConfig`` (``SizeInGiB`` up to 100,800); Amazon FSx for
    Lustre User Guide, "Managing provisioned throughput capacity".

    Examples
    --------
    >>> from trainium_lab.units import GB
    >>> round(default_storage_bytes_per_s() / GB, 1)
    100.8
    """
    return reliability.fsx_lustre_bytes_per_s(reliability.hyperpod_fsx_size_range_bytes()[1],
                                              max(reliability.fsx_throughput_options_mb_per_s_per_tib()))


def checkpoint_write_bytes_per_s(n_chips: int, *, per_chip_bytes_per_s: float | None = None,
                                 storage_bytes_per_s: float | None = None) -> float:
    """Aggregate checkpoint write bandwidth of a job: every chip's share, up to the storage's limit.

    ``min(n_chips × per_chip_bytes_per_s, storage_bytes_per_s)``. Each rank writes its own shard
    (a sharded checkpoint), so the bandwidth grows with the job until the shared storage is the
    bottleneck. Defaults: :func:`default_checkpoint_bytes_per_s_per_chip` (Meta's storage per
    GPU) and :func:`default_storage_bytes_per_s` (the largest FSx for Lustre file system HyperPod
    creates, at the top tier: about 100.8 GB/s, chapter 06).

    Parameters
    ----------
    n_chips : int
        Chips of the job (>= 1).
    per_chip_bytes_per_s, storage_bytes_per_s : float, optional
        Bytes/s (> 0).

    References
    ----------
    arXiv:2407.21783 §3.3.1 (Tectonic, 2 TB/s sustained for 16,384 GPUs); Amazon FSx for Lustre
    User Guide, "Managing provisioned throughput capacity" and "Performance characteristics of SSD
    and HDD storage classes" (throughput grows with capacity, to multiple TB/s); AWS HPC Blog,
    "Build and deploy a 1 TB/s file system in under an hour".

    Examples
    --------
    >>> from trainium_lab.units import GB, TB
    >>> round(checkpoint_write_bytes_per_s(16) / GB, 2)        # one trn2.48xlarge
    1.95
    >>> round(checkpoint_write_bytes_per_s(32_768) / GB, 1)    # 512 Trn2 UltraServers: the FSx limit
    100.8
    """
    n_chips = integer("n_chips", n_chips, minimum=1, maximum=10**7)
    per_chip = (default_checkpoint_bytes_per_s_per_chip() if per_chip_bytes_per_s is None
                else in_range("per_chip_bytes_per_s", per_chip_bytes_per_s, 0.0, 1e15, low_open=True))
    limit = (default_storage_bytes_per_s() if storage_bytes_per_s is None
             else in_range("storage_bytes_per_s", storage_bytes_per_s, 0.0, 1e18, low_open=True))
    return min(n_chips * per_chip, limit)


class _NeverFinishes(ValueError):
    """The expected lost share reaches 1: failures come faster than a checkpoint cycle."""


def _losses(ckpt_bytes: float, write_bytes_per_s: float, read_bytes_per_s: float, mode: str,
            snapshot_s: float | None, mtbf_s: float, restart_s: float) -> dict[str, float]:
    """Chapter 06's checkpoint-and-failure losses of one job (one home for the plan and for the
    Llama 3 calibration): the write, the blocking cost δ, the optimum interval and the lost share.

    ``restart_s`` is everything a restart costs before the reload (detect, replace, recompile)."""
    write_s = ckpt_bytes / write_bytes_per_s
    reload_s = ckpt_bytes / read_bytes_per_s
    # an asynchronous checkpoint blocks for the snapshot to host memory, never longer than the write
    delta = reliability.checkpoint_cost_s(write_s, mode=mode,
                                          snapshot_s=None if snapshot_s is None else min(snapshot_s, write_s))
    restart_total = restart_s + reload_s
    tau = reliability.optimal_interval_s(delta, mtbf_s)
    if mode == "async":
        tau = max(tau, write_s)  # the upload must finish before the next snapshot (chapter 06)
    lost = float(reliability.lost_fraction(tau, delta, mtbf_s, restart_total))
    if not lost < 1.0:
        raise _NeverFinishes(
            f"chip_mtbf_s: the job fails every {format_seconds(mtbf_s)} on average, too often to finish: a "
            f"checkpoint blocks for {format_seconds(delta)} and a restart takes {format_seconds(restart_total)}; "
            "raise the MTBF, the checkpoint bandwidth or use fewer chips")
    return {"checkpoint_write_s": write_s, "reload_s": reload_s, "checkpoint_cost_s": delta,
            "checkpoint_interval_s": tau, "restart_total_s": restart_total, "lost_fraction": lost}


@dataclass(frozen=True)
class Calibration:
    """The planner's checkpoint-and-failure model on a run that was done (:func:`llama3_calibration`).

    Attributes
    ----------
    platform : str
        The comparison system of ``data/`` the run used.
    n_accelerators, n_instances : int
    job_mtbf_s : float
        Mean time between the run's unexpected interruptions.
    checkpoint_bytes, checkpoint_write_bytes_per_s : float
    restart_s : float
        The restart time assumed (no public figure).
    losses : dict
        :func:`_losses`'s results (``lost_fraction``, ``checkpoint_interval_s``...).
    published_effective_fraction : float
        What Meta reports ("higher than 90 %").
    """

    platform: str
    n_accelerators: int
    n_instances: int
    job_mtbf_s: float
    checkpoint_bytes: float
    checkpoint_write_bytes_per_s: float
    restart_s: float
    losses: dict
    published_effective_fraction: float

    @property
    def effective_fraction(self) -> float:
        """Share of the wall time spent on training steps: 1 − the lost share."""
        return 1.0 - self.losses["lost_fraction"]

    def __repr__(self) -> str:
        return (f"Calibration({self.platform} × {self.n_instances}, MTBF {format_seconds(self.job_mtbf_s)}, "
                f"effective {self.effective_fraction:.1%} vs published > {self.published_effective_fraction:.0%})")


def llama3_calibration(*, restart_s: float | None = None, recipe_name: str = "bf16-adam") -> Calibration:
    """Meta's Llama 3 405B pre-training through the planner's loss model, on its own hardware.

    16,384 H100s (the comparison ``p5.48xlarge`` of ``data/``: 8 per instance) with the run's
    interruption rate (419 in 54 days, Table 5), its checkpoint (405B parameters at
    :func:`checkpoint_bytes`) written at :func:`checkpoint_write_bytes_per_s` with the storage
    limit the run had (Tectonic's sustained 2 TB/s), and the planner's default restart. Meta
    reports higher than 90 % effective training time: the model should land near it.

    Parameters
    ----------
    restart_s : float, optional
        Seconds per restart before the reload; default :data:`DEFAULTS`'s (an assumption: Meta
        gives none).
    recipe_name : str

    References
    ----------
    Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783 (2024), §3.3.1 (storage),
    §3.3.4 and Table 5 (interruptions, effective training time).

    Examples
    --------
    >>> c = llama3_calibration()
    >>> c.n_accelerators, round(c.checkpoint_write_bytes_per_s / 1e12, 1), round(c.effective_fraction, 3)
    (16384, 2.0, 0.927)
    """
    restart = DEFAULTS["restart_s"] if restart_s is None else positive("restart_s", restart_s, allow_zero=True)
    summary = reliability.llama3_summary()
    plat = _platforms().set_index("platform").loc["p5.48xlarge"]
    n = summary.n_gpus
    storage = reliability.llama3_storage_bytes_per_s()
    bw = checkpoint_write_bytes_per_s(n, storage_bytes_per_s=storage)
    mtbf = reliability.job_mtbf_s(summary.per_gpu_mtbf_s, n)
    size = checkpoint_bytes(preset_params("llama3-405b"), recipe_name)
    losses = _losses(size, bw, bw, "sync", None, mtbf, restart)
    return Calibration(platform="p5.48xlarge", n_accelerators=n,
                       n_instances=math.ceil(n / int(plat.chips_per_platform)), job_mtbf_s=mtbf,
                       checkpoint_bytes=size, checkpoint_write_bytes_per_s=bw, restart_s=restart, losses=losses,
                       published_effective_fraction=reliability.llama3_effective_training_fraction())


def batch_schedule(model: str | ModelPreset) -> pd.DataFrame:
    """The global batch a published pre-training run of ``model`` used, phase by phase.

    Rows of ``data/batch_schedules.csv`` (empty for a model with none): ``phase``,
    ``from_tokens``, ``batch_tokens`` (as the source rounds it), ``seq_len``, ``batch_sequences``.

    References
    ----------
    Llama 3 405B: arXiv:2407.21783 §3.4.1 (the schedule) and Table 4 (2,048 sequences per step).

    Examples
    --------
    >>> batch_schedule("llama3-405b").batch_sequences.tolist()
    [1024, 1024, 2048]
    """
    m = layouts.resolve_model(model)
    df = specs.read_data_csv("batch_schedules.csv")
    return df[df.model == m.key].sort_values("phase").reset_index(drop=True)


def default_global_batch(model: str | ModelPreset, n_tokens: float) -> tuple[int, str]:
    """The planner's default global batch, in sequences of the model's length, and where it comes from.

    With a published schedule (:func:`batch_schedule`): the batch of the phase that trains the
    most of the run's ``n_tokens`` tokens, kept in tokens per step at the preset's sequence length
    (Llama 3 405B: 1,024 sequences of 8,192 for a run up to about 5.7T tokens, 2,048 beyond).
    Without one: 1,024 sequences, an assumption.

    Parameters
    ----------
    model : str or ModelPreset
    n_tokens : float
        Tokens of the run (> 0).

    Returns
    -------
    (int, str)
        Sequences per step; ``"sourced: ..."`` or ``"assumption: ..."``.

    References
    ----------
    arXiv:2407.21783 §3.4.1 and Table 4.

    Examples
    --------
    >>> default_global_batch("llama3-405b", 15e12)[0], default_global_batch("llama3-405b", 1e12)[0]
    (2048, 1024)
    >>> default_global_batch("llama3-8b", 1e12)
    (1024, 'assumption: no published batch schedule for this model')
    """
    m = layouts.resolve_model(model)
    n = positive("n_tokens", n_tokens)
    sched = batch_schedule(m)
    if sched.empty:
        return int(_FALLBACK_GLOBAL_BATCH), "assumption: no published batch schedule for this model"
    starts = sched.from_tokens.astype(float).tolist()
    ends = starts[1:] + [math.inf]
    covered = [max(0.0, min(n, e) - s) for s, e in zip(starts, ends)]
    i = max(range(len(covered)), key=lambda k: (covered[k], k))  # ties: the later phase
    r = sched.iloc[i]
    seqs = max(1, round(int(r.batch_sequences) * int(r.seq_len) / m.seq_len))
    return int(seqs), (f"sourced: phase {int(r.phase)} of {m.name}'s published batch schedule "
                       f"({r.reference.split(';')[0]}), {covered[i] / n:.0%} of the run's tokens")


def preset_params(name: str) -> float:
    """Parameters of a model preset (``sizing.preset(name).n_params``)."""
    return float(sizing.preset(name).n_params)


@functools.lru_cache(maxsize=256)
def _search(model: ModelPreset, system: str, n_systems: int, lnc: int | None, global_batch: int,
            mfu: float, dp_overlap: float, min_headroom_fraction: float, recipe_name: str, dtype: str,
            micro_batches: tuple[int, ...], zero_stages: tuple[int, ...], recompute: tuple[str, ...],
            sequence_parallel: bool, framework: str | None = None,
            overlap_setting: str | None = None) -> layouts.Plan:
    """Chapter 05's planner, cached: the same arguments give the same search."""
    return layouts.plan(model, system=system, n_systems=n_systems, lnc=lnc, global_batch=global_batch,
                        micro_batches=micro_batches, zero_stages=zero_stages, recompute=recompute,
                        sequence_parallel=sequence_parallel, mfu=mfu, dp_overlap=dp_overlap,
                        min_headroom_fraction=min_headroom_fraction, recipe_name=recipe_name,
                        dtype=dtype, framework=framework, overlap_setting=overlap_setting)


def _active_params(m: ModelPreset) -> float:
    """Parameters a token uses: all of a dense model's, the published active count of a
    mixture-of-experts model (chapter 10's ``n_active_params``) — what 6ND counts."""
    active = float(getattr(m, "n_active_params", 0.0) or 0.0)
    return active if active > 0 else float(m.n_params)


def _try_search(*args) -> layouts.Plan | None:
    """The search, or ``None`` when no layout of that cluster fits (or none is admissible)."""
    try:
        p = _search(*args)
    except ValueError:
        return None
    return None if p.table.empty else p


@functools.lru_cache(maxsize=512)
def _compile_counts(n_graphs: int, n_instances: int, cache: str, seq_len: int,
                    precompile_workers: int) -> tuple[float, float, float, float]:
    """Chapter 07's run model for the plan's graphs at one second per compile: (first-launch
    stall, stall of a restart on a replacement instance, pre-compilation on one instance,
    node-seconds compiling at the first launch). Every one is proportional to the compile time
    (:func:`~trainium_lab.compilation.run_compiles`: one compile time per step at which a node
    compiles, one per node compile; :func:`~trainium_lab.compilation.parallel_precompile_s`:
    ``ceil(graphs / workers)`` of them), so :func:`_compile_stalls` scales these."""
    stream = pd.DataFrame({"step": np.arange(n_graphs), "batch_size": 1, "seq_len": seq_len,
                           "variant": [f"graph {i + 1}" for i in range(n_graphs)],
                           "ranks": "all ranks"})
    if cache == "precompiled":
        warm = compilation.trial_run_keys(stream, n_graphs)
        first = compilation.run_compiles(stream, compile_s=1.0, n_nodes=n_instances,
                                         shared_cache=True, warm_keys=warm)
        pre = compilation.parallel_precompile_s(n_graphs, 1.0, precompile_workers)
    else:
        first = compilation.run_compiles(stream, compile_s=1.0, n_nodes=n_instances,
                                         shared_cache=cache == "shared")
        pre = 0.0
    again = compilation.run_compiles(stream, compile_s=1.0, n_nodes=n_instances,
                                     shared_cache=cache != "local", warm_keys=first.cache_keys,
                                     n_fresh_nodes=None if cache != "local" else 1)
    return first.stall_s, again.stall_s, pre, first.node_compile_s


def _compile_stalls(n_graphs: int, compile_s: float, n_instances: int, cache: str, seq_len: int,
                    precompile_workers: int) -> tuple[float, ...]:
    """:func:`_compile_counts` at ``compile_s`` seconds per compile."""
    if compile_s == 0.0:
        return (0.0, 0.0, 0.0, 0.0)
    return tuple(compile_s * x for x in _compile_counts(n_graphs, n_instances, cache, seq_len,
                                                        precompile_workers))


@dataclass(frozen=True)
class _Inputs:
    """Everything the economics of a plan depend on besides the layout (base units)."""

    n_tokens: float
    n_params: float
    recipe_name: str
    system: object  # specs.System, resolved once
    n_chips: int
    n_instances: int
    seq_len: int
    usd_per_hour: float
    checkpoint_write_bytes_per_s: float
    checkpoint_read_bytes_per_s: float
    checkpoint_mode: str
    snapshot_s: float | None
    chip_mtbf_s: float
    instance_mtbf_s: float | None
    restart_s: float
    compile_s: float
    n_graphs: int
    cache: str
    precompile_workers: int
    framework: str | None = None

    def replace(self, **kw) -> "_Inputs":
        from dataclasses import replace as _replace

        return _replace(self, **kw)


def _economics(tokens_per_s: float, x: _Inputs, detail: bool = True) -> dict[str, float]:
    """Days, losses, instance-hours and dollars of a layout running at ``tokens_per_s`` (base units).

    ``detail=False`` skips the breakdown of the lost time (the sensitivity table and the
    deadline search need only wall time and cost)."""
    compute_s = x.n_tokens / tokens_per_s
    ckpt = checkpoint_bytes(x.n_params, x.recipe_name, framework=x.framework)
    mtbf = reliability.layout_mtbf_s(x.n_chips, system=x.system, chip_mtbf_s=x.chip_mtbf_s,
                                     instance_mtbf_s=x.instance_mtbf_s)
    cold_s, restart_compile_s, pre_s, node_compile_s = _compile_stalls(
        x.n_graphs, x.compile_s, x.n_instances, x.cache, x.seq_len, x.precompile_workers)
    loss = _losses(ckpt, x.checkpoint_write_bytes_per_s, x.checkpoint_read_bytes_per_s, x.checkpoint_mode,
                   x.snapshot_s, mtbf, x.restart_s + restart_compile_s)
    write_s, reload_s, delta = loss["checkpoint_write_s"], loss["reload_s"], loss["checkpoint_cost_s"]
    tau, restart_total, lost = loss["checkpoint_interval_s"], loss["restart_total_s"], loss["lost_fraction"]
    training_wall = compute_s / (1.0 - lost)
    wall = cold_s + training_wall
    instance_hours = x.n_instances * wall / _SECONDS_PER_HOUR + pre_s / _SECONDS_PER_HOUR
    cost = instance_hours * x.usd_per_hour
    out = {
        "compute_s": compute_s, "checkpoint_bytes": ckpt, "checkpoint_write_s": write_s,
        "reload_s": reload_s, "checkpoint_cost_s": delta, "job_mtbf_s": mtbf,
        "checkpoint_interval_s": tau, "young_interval_s": reliability.young_interval_s(delta, mtbf),
        "restart_total_s": restart_total, "restart_compile_s": restart_compile_s,
        "lost_fraction": lost, "cold_start_s": cold_s, "precompile_s": pre_s,
        "node_compile_s": node_compile_s, "wall_s": wall, "instance_hours": instance_hours,
        "cost_usd": cost, "cost_per_million_tokens_usd": cost / x.n_tokens * 1e6,
    }
    if detail:
        parts = reliability.lost_time_breakdown(tau, delta, mtbf, restart_total).iloc[0]
        segment = reliability.expected_segment_s(tau, delta, mtbf, restart_total)
        out.update({
            "lost_checkpoint_s": float(parts["checkpoint"]) * training_wall,
            "lost_rework_s": float(parts["rework"]) * training_wall,
            "lost_restart_s": float(parts["restart"]) * training_wall,
            # segments of work × failures per segment, exp(L/M) − 1 = E / (M + R) (chapter 06)
            "expected_failures": compute_s / tau * segment / (mtbf + restart_total),
        })
    return out


@functools.cache
def _proxy_chip_mtbf_s() -> float:
    """Chapter 06's per-accelerator MTBF from Meta's Llama 3 interruptions (a GPU-cluster proxy)."""
    return reliability.llama3_summary().per_gpu_mtbf_s


@dataclass(frozen=True, repr=False)
class RunPlan:
    """A training run planned end to end. Build it with :func:`plan_run`; all base units.

    Attributes
    ----------
    model : ModelPreset
    n_tokens : float
        Token budget.
    system : str
        System key; ``n_systems`` of them, ``n_chips`` chips, ``n_instances`` billed instances of
        type ``instance_type``.
    lnc : int
    inputs : dict
        Every input by name, in base units.
    assumptions : tuple of str
        Names of the inputs that no public source gives.
    price_basis : str
        Where ``usd_per_hour`` comes from: a sourced row (option, region, date, tier) or
        ``"input (assumption)"``.
    sizing : trainium_lab.sizing.SizingPlan
        Chapter 04's sizing of the same job (state, fewest chips, instance-days at the MFU).
    layout : trainium_lab.layouts.Layout
    estimate : trainium_lab.layouts.LayoutEstimate
        Chapter 05's memory per chip and step time of the layout.
    search : trainium_lab.layouts.Plan or None
        The planner's search that chose the layout (``None`` when a layout was given).
    results : dict
        Days, losses, compiles and costs (see :attr:`wall_s`, :attr:`cost_usd`...).
    sensitivity : pandas.DataFrame
        One row per uncertain input: ``input, value, low_value, high_value, cost_low_usd,
        cost_high_usd, days_low, days_high, swing_usd``, largest swing first.
    deadline_s : float or None
    systems_tried : tuple of int
        Counts of systems the search evaluated with the layout planner, in order (deadline or
        smallest-that-fits mode); the last is the answer.
    billing : Billing
        How the instances are bought under the purchase option's terms (:func:`bill`):
        ``results["billed_instance_hours"]`` (>= ``instance_hours``) is what ``cost_usd`` pays for,
        ``billing.note`` says what the terms did (empty when nothing).
    systems_bounded : int
        Counts of systems below the answer that the deadline search ruled out without the planner:
        below the state's or the perfect-scaling floor, or missing the deadline even at perfect
        scaling with the same failures and checkpoints. With :attr:`systems_tried` they cover every
        count from 1 to the answer, so the answer is the exact minimum.
    fastest_count : bool
        True when the deadline search found no count that meets the deadline: the plan is then the
        count with the least expected wall time (exact: every count that splits the global batch,
        in the order of their floors), and :attr:`deadline_verdict` says "missed".
    deadline_alternative : RunPlan or None
        With :attr:`fastest_count`, the plan on the first system of the same chip with a larger
        NeuronLink domain (an UltraServer) that meets the deadline within the same chip budget;
        ``None`` when none does.
    """

    model: ModelPreset
    n_tokens: float
    system: str
    n_systems: int
    lnc: int
    n_chips: int
    n_instances: int
    instance_type: str
    inputs: dict
    assumptions: tuple[str, ...]
    price_basis: str
    sizing: sizing.SizingPlan
    layout: layouts.Layout
    estimate: layouts.LayoutEstimate
    search: layouts.Plan | None
    results: dict
    sensitivity: pd.DataFrame
    deadline_s: float | None
    systems_tried: tuple[int, ...]
    systems_bounded: int = 0
    billing: Billing | None = None
    deadline_alternative: "RunPlan | None" = None
    fastest_count: bool = False

    def __getattr__(self, name: str):  # the results read as attributes: plan.wall_s, plan.cost_usd
        results = self.__dict__.get("results")
        if results is not None and name in results:
            return results[name]
        raise AttributeError(f"RunPlan has no attribute {name!r}")

    @property
    def days(self) -> float:
        """Expected wall-clock days, failures, checkpoints and the first launch's compiles included."""
        return self.results["wall_s"] / day

    @property
    def instance_days(self) -> float:
        """Instance-hours / 24: chapter 04's instance-days, with every loss counted."""
        return self.results["instance_hours"] / 24.0

    @property
    def tokens_per_s(self) -> float:
        """Training throughput of the layout while it runs (no losses)."""
        return self.estimate.tokens_per_s

    @property
    def step_s(self) -> float:
        """Seconds per optimizer step (chapter 05's first-order model)."""
        return self.estimate.step_s

    @property
    def usd_per_hour(self) -> float:
        """Price of one billed instance for one hour."""
        return self.inputs["usd_per_hour"]

    @property
    def framework(self) -> str | None:
        """The framework that runs the plan (a key of ``data/frameworks.csv``), or ``None`` for the
        teaching search, which checks none."""
        return self.inputs.get("framework")

    @property
    def flags(self) -> tuple[str, ...]:
        """Environment variables the plan's overlap schedule needs (``NAME=value``); ``()`` if none."""
        return tuple(self.inputs.get("overlap_flags") or ())

    @property
    def flags_text(self) -> str:
        """:attr:`flags` as one shell line, or ``"none"``."""
        return " ".join(self.flags) or "none"

    @property
    def framework_text(self) -> str:
        """The framework, its status and the flags, in one phrase (what a plan shows a reader)."""
        if self.framework is None:
            crosses = (self.search is not None and not self.search.table.empty
                       and self.search.table.tp_level.iloc[0] == "efa")
            return "teaching search: no framework checked" + ("; its TP groups cross EFA" if crosses else "")
        f = frameworks.framework(self.framework)
        return (f"{f.name}, {self.inputs.get('framework_status')}; overlap {self.inputs.get('overlap_setting')}"
                f" (flags: {self.flags_text})")

    @property
    def deadline_verdict(self) -> str | None:
        """``"met"`` (even at the range's slow end), ``"at risk"`` (met at the planned value, missed
        at the slow end), ``"missed"`` (missed at the planned value; ``"missed at both ends"`` when
        even the fast end misses); ``None`` without a deadline. The range is :attr:`results`'
        ``days_low``/``days_high`` (MFU, failure rate and price ranges together)."""
        if self.deadline_s is None:
            return None
        d = self.deadline_s / day
        if self.results["days_high"] <= d:
            return "met"
        if self.days <= d:
            return "at risk"
        return "missed at both ends" if self.results["days_low"] > d else "missed"

    @property
    def deadline_text(self) -> str | None:
        """:attr:`deadline_verdict` with the range it comes from, for a reader."""
        v = self.deadline_verdict
        if v is None:
            return None
        r = self.results
        text = (f"{format_seconds(self.deadline_s)}: {v} (planned {self.days:,.1f} days; range "
                f"{r['days_low']:,.1f}–{r['days_high']:,.1f} days)")
        if not self.fastest_count:
            return text
        c = self.layout.cluster
        fw = None if self.framework is None else frameworks.framework(self.framework)
        cap = _max_systems_splitting(self.model, c.n_ranks // c.n_systems, int(self.inputs["global_batch"]), fw)
        text += (f"; no count of {c.system} the search reached meets it (no layout splits the "
                 f"{int(self.inputs['global_batch']):,}-sequence batch over more than {cap:,} of them"
                 f"{' with TP inside one' if fw is not None and fw.tp_domain == 'system' else ''}): "
                 f"this is the fastest count")
        a = self.deadline_alternative
        if a is None:
            return text
        ac = a.layout.cluster
        name = "teaching search" if a.framework is None else frameworks.framework(a.framework).name
        return (f"{text}; {a.n_systems:,} × {ac.system} ({ac.n_chips:,} chips, {a.layout.label()}, {name}) "
                f"would: {a.deadline_verdict} (planned {a.days:,.1f} days; range "
                f"{a.results['days_low']:,.1f}–{a.results['days_high']:,.1f} days)")

    @property
    def meets_deadline(self) -> bool | None:
        """Whether the expected wall time is within the deadline (None without one)."""
        return None if self.deadline_s is None else self.results["wall_s"] <= self.deadline_s

    @property
    def goodput(self) -> float:
        """Share of the wall time spent on useful training steps."""
        return self.results["compute_s"] / self.results["wall_s"]

    def memory_table(self) -> pd.DataFrame:
        """Memory per chip by part (chapter 05): ``part, bytes, gib, hbm_gib, allowed_gib``."""
        return self.estimate.memory_table()

    def time_table(self) -> pd.DataFrame:
        """One step by part (chapter 05): ``part, seconds, share``."""
        return self.estimate.time_table()

    def wall_time_table(self) -> pd.DataFrame:
        """Where the wall-clock time goes: ``part, seconds, days, share``.

        Parts: ``training steps`` (useful work), ``checkpoint writes``, ``rework after failures``,
        ``restarts`` (detect, replace, reload, recompile), ``first-launch compiles``.
        """
        r = self.results
        parts = [("training steps", r["compute_s"]), ("checkpoint writes", r["lost_checkpoint_s"]),
                 ("rework after failures", r["lost_rework_s"]), ("restarts", r["lost_restart_s"]),
                 ("first-launch compiles", r["cold_start_s"])]
        total = r["wall_s"]
        return pd.DataFrame({"part": [p for p, _ in parts], "seconds": [s for _, s in parts],
                             "days": [s / day for _, s in parts], "share": [s / total for _, s in parts]})

    def cost_table(self) -> pd.DataFrame:
        """Where the money goes: ``part, instance_hours, usd, share``.

        The wall-time parts on every instance, plus ``pre-compilation`` on one instance.
        """
        w = self.wall_time_table()
        hours = list(w["seconds"] * self.n_instances / _SECONDS_PER_HOUR)
        names = list(w["part"])
        names.append("pre-compilation (one instance)")
        hours.append(self.results["precompile_s"] / _SECONDS_PER_HOUR)
        names.append("bought, not used (the purchase terms)")
        unused = self.results["billed_instance_hours"] - sum(hours)
        hours.append(unused if unused > 1e-9 * self.results["billed_instance_hours"] else 0.0)
        usd = [h * self.usd_per_hour for h in hours]
        others = self.inputs.get("other_costs_usd") or {}
        for k in OTHER_COSTS:
            names.append(f"{k} (outside instance-hours; given)")
            hours.append(0.0)
            usd.append(float(others.get(k, 0.0)))
        total = sum(usd)
        return pd.DataFrame({"part": names, "instance_hours": hours, "usd": usd,
                             "share": [u / total for u in usd]})

    def inputs_table(self) -> pd.DataFrame:
        """Every input: ``input, value, unit, basis`` (``assumption``, ``requirement``,
        ``sourced: ...`` or ``chosen``)."""
        x = self.inputs
        sourced_mtbf = ("sourced: Llama 3 per-GPU proxy (Meta 2024, Table 5), a GPU-cluster figure"
                        if x.get("chip_mtbf_is_proxy") else "assumption")
        rows = [
            ("model", self.model.name, "", "chosen"),
            ("parameters", self.model.n_params, "count", "sourced: " + "; ".join(self.model.sources)),
            ("token budget", self.n_tokens, "tokens", "requirement"),
            ("system", f"{self.n_systems} × {self.system}", "", "chosen"),
            ("LNC", self.lnc, "", "chosen"),
            ("global batch", x["global_batch"], "sequences", x.get("global_batch_basis", "chosen")),
            ("precision recipe", x["recipe_name"], "", "chosen"),
            ("MFU while computing", x["mfu"], "fraction", x.get("mfu_basis", "assumption")),
            (f"price per instance-hour of {x['billing_unit']} ({x['chips_per_instance']} chips)", x["usd_per_hour"],
             "USD/hour", self.price_basis),
            ("price range (low, high)", x["usd_per_hour_range"], "USD/hour", "assumption: the range of the price"),
            ("MFU range (low, high)", x["mfu_range"], "fraction", "assumption: the range of the MFU"),
            ("chip MTBF range (low, high)", x["chip_mtbf_range_s"], "s", "assumption: the range of the failure rate"),
            ("purchase option", x["purchase_option"], "", "chosen; billed under its terms"),
            ("checkpoint write bandwidth per chip", x["checkpoint_bytes_per_s_per_chip"], "bytes/s",
             "assumption" if "checkpoint_bytes_per_s_per_chip" in self.assumptions else
             "sourced: Llama 3 405B storage per GPU (Meta 2024, §3.3.1: 2 TB/s for 16,384 GPUs), a GPU-cluster proxy"),
            ("checkpoint storage limit", x["storage_bytes_per_s"], "bytes/s",
             "assumption" if "storage_bytes_per_s" in self.assumptions else
             ("sourced: Amazon S3, at least 3,500 PUT requests/s per partitioned prefix × 5 MiB parts, one "
              "prefix per instance (a floor: S3 sets no limit on prefixes)")
             if x.get("checkpoint_storage") == "s3" else
             "sourced: FSx for Lustre, the largest file system HyperPod creates (100,800 GiB) at 1,000 MB/s "
             "per TiB (chapter 06)"),
            ("checkpoint write bandwidth (whole job)", x["checkpoint_write_bytes_per_s"], "bytes/s",
             "assumption" if x.get("checkpoint_bandwidth_given") else
             "computed: chips × per-chip bandwidth, up to the storage limit"),
            ("checkpoint read bandwidth", x["checkpoint_read_bytes_per_s"], "bytes/s",
             "assumption (the write bandwidth unless given)"),
            ("checkpoint mode", x["checkpoint_mode"], "", "chosen"),
            ("chip MTBF", x["chip_mtbf_s"], "s", sourced_mtbf),
            ("restart (detect, replace, start)", x["restart_s"], "s", "assumption"),
            ("compile time per graph", x["compile_s"], "s", "assumption"),
            ("distinct graphs", x["n_graphs"], "count", "assumption"),
            ("compile cache", x["cache"], "", "chosen"),
        ]
        if x.get("instance_mtbf_s") is not None:
            rows.append(("instance MTBF", x["instance_mtbf_s"], "s", "assumption"))
        if x.get("dp_overlap") is not None:
            d = layouts.overlap_default("dp_overlap")
            rows.append(("data-parallel overlap", x["dp_overlap"], "fraction",
                         f"{d.basis} (labelled default {d.default:g}, plausible {d.low:g}–{d.high:g})"
                         if x["dp_overlap"] == d.default else "chosen"))
        if x.get("framework"):
            f = frameworks.framework(x["framework"])
            rows.append(("training framework", f.name, "",
                         f"{x.get('framework_basis', 'chosen')} ({x.get('framework_status') or f.status})"))
            rows.append(("overlap schedule", x.get("overlap_setting"), "",
                         f"sourced: AWS compute-communication overlap page; flags {self.flags_text}"
                         + (" (experimental)" if x.get("overlap_experimental") else "")))
        else:
            rows.append(("training framework", "none checked", "",
                         "teaching search: every layout, every data-parallel collective behind compute; "
                         "no Neuron framework is known to run it"))
        for k in OTHER_COSTS:
            rows.append((f"{k} (cost outside instance-hours)", float((x.get("other_costs_usd") or {}).get(k, 0.0)),
                         "USD", "input (zero unless given)"))
        if self.deadline_s is not None:
            rows.append(("deadline", self.deadline_s, "s", "requirement"))
        return pd.DataFrame(rows, columns=["input", "value", "unit", "basis"])

    def __repr__(self) -> str:  # short and rounded: the fields hold tables of full-precision floats
        return (f"RunPlan({self.model.name!r}, {self.n_tokens:.3g} tokens, {self.n_systems} × {self.system}, "
                f"{self.layout.label()!r}, {self.days:,.1f} days, {self.results['cost_usd']:,.0f} USD)")

    def _repr_markdown_(self) -> str:
        r = self.results
        deadline = ""
        if self.deadline_s is not None:
            deadline = f" Deadline {self.deadline_text}."
        return (f"**{self.model.name}**, {self.n_tokens:.3g} tokens on **{self.n_systems} × {self.system}** "
                f"({self.n_chips} chips, LNC={self.lnc}): {self.layout.label()}; framework: {self.framework_text}. "
                f"{self.estimate.total_bytes / GiB:.1f} of {self.estimate.hbm_bytes / GiB:.0f} GiB per chip; "
                f"step {format_seconds(self.step_s)}, {self.tokens_per_s:,.0f} tokens/s. "
                f"**{self.days:,.1f} days** wall clock ({r['lost_fraction']:.1%} of training time lost to "
                f"checkpoints, rework and restarts; {format_seconds(r['cold_start_s'])} of first-launch compiles); "
                f"**{r['billed_instance_hours']:,.0f} instance-hours** billed ({self.n_instances} × "
                f"{self.inputs['billing_unit']}, {self.inputs['chips_per_instance']} chips each) × "
                f"{self.usd_per_hour:,.2f} USD = **{r['cost_usd']:,.0f} USD**, "
                f"{r['cost_per_million_tokens_usd']:,.3f} USD per million tokens (price: {self.price_basis}). "
                f"**Range: {r['days_low']:,.0f}–{r['days_high']:,.0f} days, {_usd_short(r['cost_low_usd'])}–"
                f"{_usd_short(r['cost_high_usd'])}** over the MFU, failure-rate and price ranges."
                + (f" Purchase terms: {self.billing.note}." if self.billing is not None and self.billing.note else "")
                + deadline)


def _usd_short(x: float) -> str:
    """Dollars to three significant figures (a range, not a figure to the dollar)."""
    for div, suffix in ((1e9, " B USD"), (1e6, " M USD"), (1e3, " k USD")):
        if abs(x) >= div:
            return f"{x / div:,.3g}{suffix}"
    return f"{x:,.0f} USD"


def _as_tuple(name: str, values, item) -> tuple:
    return tuple(sequence(name, values, item))


def _range(name: str, value, centre: float | None, high: float) -> tuple[float, float] | None:
    """A (low, high) pair of positive numbers with low <= centre <= high (when centre is given)."""
    if value is None:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair, got {value!r}"[:160])
    lo = in_range(name, value[0], 0.0, high, low_open=True)
    hi = in_range(name, value[1], 0.0, high, low_open=True)
    if lo > hi or (centre is not None and not lo <= centre <= hi):
        raise ValueError(f"{name} must be (low, high) with low <= {'the value' if centre is None else f'{centre:g}'} "
                         f"<= high, got {value!r}")
    return (lo, hi)


def _run_inputs(m: ModelPreset, system_key: str, n_tokens: float, recipe_name: str, usd_per_hour: float,
                checkpointing: tuple, chip_mtbf_s: float, instance_mtbf_s: float | None, restart_s: float,
                compile_s: float, n_graphs: int, cache: str, precompile_workers: int,
                n_systems: int, framework: str | None = None) -> _Inputs:
    """The economics' inputs of ``n_systems`` systems (one home for the plan and the search);
    ``framework`` decides what a checkpoint holds (:func:`checkpoint_bytes`)."""
    s = specs.system(system_key)
    write, read, per_chip, storage, mode, snapshot = checkpointing
    if storage == "s3":  # S3's floor grows with the writers: one prefix per instance
        storage = reliability.s3_write_bytes_per_s(n_systems * billed_instance(s)[1])
    if write is None:  # the bandwidth grows with the job up to the storage's limit
        write = checkpoint_write_bytes_per_s(n_systems * s.n_chips, per_chip_bytes_per_s=per_chip,
                                             storage_bytes_per_s=storage)
    read = write if read is None else read
    return _Inputs(n_tokens=n_tokens, n_params=float(m.n_params), recipe_name=recipe_name, system=s,
                   n_chips=n_systems * s.n_chips, n_instances=n_systems * billed_instance(s)[1],
                   seq_len=m.seq_len, usd_per_hour=usd_per_hour, checkpoint_write_bytes_per_s=write,
                   checkpoint_read_bytes_per_s=read, checkpoint_mode=mode, snapshot_s=snapshot,
                   chip_mtbf_s=chip_mtbf_s, instance_mtbf_s=instance_mtbf_s, restart_s=restart_s,
                   compile_s=compile_s, n_graphs=n_graphs, cache=cache, precompile_workers=precompile_workers,
                   framework=framework)


def _first(pred: Callable[[int], bool], counts: Sequence[int] | range) -> tuple[int | None, list[int]]:
    """The first count of ``counts`` (ascending) with ``pred(count)``, and the counts tried.

    ``pred`` need not be monotone (the global batch must split evenly over the data-parallel
    ranks, so a count can work where its neighbours do not): every count is tried in turn, so
    the answer is exact whenever ``counts`` holds every count that could work."""
    tried: list[int] = []
    for n in counts:
        tried.append(n)
        if pred(n):
            return n, tried
    return None, tried


#: ``framework`` of :func:`plan_run` for the teaching search (every layout, no framework checked)
TEACHING_SEARCH = "any"


# ----------------------------------------------------------------- the specs a plan is built from


@dataclass(frozen=True)
class Job:
    """What is trained: the model, the tokens, and when it must be done.

    Attributes
    ----------
    model : str or ModelPreset
    n_tokens : float
        Training tokens (> 0).
    deadline_s : float, optional
        Wall-clock deadline, s; chooses the count of systems when the cluster does not fix it.
    global_batch : int, optional
        Sequences per step; default the model's published schedule (:func:`default_global_batch`).
    recipe_name : str, optional
        Precision recipe (:data:`trainium_lab.sizing.RECIPES`); default the framework's.
    dtype : str
        Number format of the matmuls.
    """

    model: object
    n_tokens: float
    deadline_s: float | None = None
    global_batch: int | None = None
    recipe_name: str | None = None
    dtype: str = "bfloat16"


@dataclass(frozen=True)
class ClusterSpec:
    """Where and with what it runs: the system, how many, the framework and its schedule.

    ``n_systems`` fixes the count (else the fewest that fit, or that meet the job's deadline, up
    to ``max_systems``); ``layout`` fixes the layout; ``framework`` as in :func:`plan_run`.
    """

    system: str | specs.System = "trn2.48xlarge"  # a name, or the record (resolved once in _resolve)
    n_systems: int | None = None
    lnc: int | None = None
    max_systems: int | None = None
    framework: str | None = None
    overlap_setting: str | None = None
    layout: object = None


@dataclass(frozen=True)
class Execution:
    """How the layout search runs: the MFU while computing and the options it searches
    (as in :func:`trainium_lab.layouts.plan`). ``mfu`` ``None`` is the calibrated default."""

    mfu: float | None = None
    mfu_range: tuple[float, float] | None = None
    dp_overlap: float | None = None
    min_headroom_fraction: float = 0.10
    micro_batches: tuple[int, ...] = (1, 2, 4)
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    recompute: tuple[str, ...] = sizing.RECOMPUTE_MODES
    sequence_parallel: bool = True


@dataclass(frozen=True)
class ReliabilitySpec:
    """Failures and checkpoints (chapter 06): bandwidths in bytes/s, times in s."""

    checkpoint_write_bytes_per_s: float | None = None
    checkpoint_read_bytes_per_s: float | None = None
    checkpoint_bytes_per_s_per_chip: float | None = None
    storage_bytes_per_s: float | None = None
    checkpoint_mode: str = "sync"
    checkpoint_storage: str = "fsx"
    snapshot_s: float | None = None
    chip_mtbf_s: float | None = None
    chip_mtbf_range_s: tuple[float, float] | None = None
    instance_mtbf_s: float | None = None
    restart_s: float = DEFAULTS["restart_s"]


@dataclass(frozen=True)
class CompilationSpec:
    """Compiles (chapter 07): seconds per graph, graphs, the cache and the pre-compilation workers."""

    compile_s: float = DEFAULTS["compile_s"]
    n_graphs: int = DEFAULTS["n_graphs"]
    cache: str = "precompiled"
    precompile_workers: int = DEFAULTS["precompile_workers"]


@dataclass(frozen=True)
class CostSpec:
    """Dollars: the price (per instance-hour, or per chip-hour), how it is bought, its range, and
    line items outside the instance-hours (USD)."""

    usd_per_hour: float | None = None
    usd_per_chip_hour: float | None = None
    purchase_option: str = "on-demand"
    usd_per_hour_range: tuple[float, float] | None = None
    other_costs_usd: Mapping[str, float] | None = None


@dataclass(frozen=True)
class _Resolved:
    """Every input of a plan checked once, defaults filled and names resolved (base units)."""

    m: ModelPreset
    n_tokens: float
    deadline: float | None
    global_batch: int
    batch_basis: str
    recipe_name: str | None  # None: the framework's
    dtype: str
    chip: object             # specs.Chip of the system
    system: str
    system_spec: object      # specs.System, resolved once
    n_systems: int | None
    lnc: int | None
    max_systems: int
    layout: object
    mfu: float
    mfu_basis: str
    ranges: dict
    dp_overlap: float
    min_headroom_fraction: float
    mbs: tuple
    zs: tuple
    modes: tuple
    sequence_parallel: bool
    ckpt: tuple
    given_ckpt: dict
    chip_mtbf: float
    proxy: bool
    inst_mtbf: float | None
    restart_s: float
    compile_s: float
    n_graphs: int
    cache: str
    precompile_workers: int
    usd_per_hour: float | None
    usd_per_chip_hour: float | None
    purchase_option: str
    others: dict


def _resolve(job: Job, cluster: ClusterSpec, ex: Execution, rel: ReliabilitySpec, comp: CompilationSpec,
             cost: CostSpec) -> _Resolved:
    """Step 1: check every input once (``ValueError`` naming it), fill the defaults, resolve the
    model and the system to their records."""
    x_tokens = positive("n_tokens", job.n_tokens)
    mfu, mfu_range = ex.mfu, ex.mfu_range
    if mfu is None and mfu_range is None:
        # the calibrated default and its fitted range (issue 24: data/calibration.csv, planner_mfu)
        cal = specs.calibration("planner_mfu")
        mfu_range = (cal.low, cal.high) if cal.low == cal.low else None
    mfu_basis = ("calibrated: planner_mfu of data/calibration.csv (fitted on AWS's Trn1 runs; an "
                 "assumption on Trn2 and Trn3)") if mfu is None else "assumption"
    mfu = sizing.default_mfu() if mfu is None else in_range("mfu", mfu, 0.0, 1.0, low_open=True)
    purchase_option = choice("purchase_option", cost.purchase_option, PURCHASE_OPTIONS)
    usd_per_chip_hour = cost.usd_per_chip_hour
    if usd_per_chip_hour is not None:
        if cost.usd_per_hour is not None:
            raise ValueError("usd_per_chip_hour: give usd_per_hour or usd_per_chip_hour, not both")
        usd_per_chip_hour = in_range("usd_per_chip_hour", usd_per_chip_hour, 0.0, 1e6, low_open=True)
    ranges = {"mfu": _range("mfu_range", mfu_range, mfu, 1.0),
              "chip_mtbf_s": None if rel.chip_mtbf_range_s is None else _range(
                  "chip_mtbf_range_s", rel.chip_mtbf_range_s, None, 1e15),
              "usd_per_hour": None if cost.usd_per_hour_range is None else _range(
                  "usd_per_hour_range", cost.usd_per_hour_range, None, 1e7)}
    others = {k: 0.0 for k in OTHER_COSTS}
    if cost.other_costs_usd is not None:
        if not isinstance(cost.other_costs_usd, Mapping):
            raise ValueError(f"other_costs_usd must be a mapping of {', '.join(OTHER_COSTS)} to USD, "
                             f"got {cost.other_costs_usd!r}"[:200])
        for k, v in cost.other_costs_usd.items():
            others[choice("other_costs_usd", k, OTHER_COSTS)] = in_range(f"other_costs_usd[{k!r}]", v, 0.0, 1e13)
    ckpt_w = None if rel.checkpoint_write_bytes_per_s is None else in_range(
        "checkpoint_write_bytes_per_s", rel.checkpoint_write_bytes_per_s, 0.0, 1e18, low_open=True)
    ckpt_r = None if rel.checkpoint_read_bytes_per_s is None else in_range(
        "checkpoint_read_bytes_per_s", rel.checkpoint_read_bytes_per_s, 0.0, 1e18, low_open=True)
    ckpt_chip = None if rel.checkpoint_bytes_per_s_per_chip is None else in_range(
        "checkpoint_bytes_per_s_per_chip", rel.checkpoint_bytes_per_s_per_chip, 0.0, 1e15, low_open=True)
    ckpt_storage = None if rel.storage_bytes_per_s is None else in_range(
        "storage_bytes_per_s", rel.storage_bytes_per_s, 0.0, 1e18, low_open=True)
    checkpoint_mode = choice("checkpoint_mode", rel.checkpoint_mode, ("sync", "async"))
    checkpoint_storage = choice("checkpoint_storage", rel.checkpoint_storage, CHECKPOINT_STORAGES)
    snapshot_s = rel.snapshot_s
    if checkpoint_mode == "async":
        if snapshot_s is None:
            raise ValueError("snapshot_s must be given (a finite number > 0) when checkpoint_mode='async'")
        snapshot_s = positive("snapshot_s", snapshot_s)
    elif snapshot_s is not None:
        snapshot_s = positive("snapshot_s", snapshot_s)
    # the scaling model's inputs, resolved once (sourced defaults read from data/ here, not per count)
    ckpt = (ckpt_w, ckpt_r,
            default_checkpoint_bytes_per_s_per_chip() if ckpt_chip is None else ckpt_chip,
            ckpt_storage if ckpt_storage is not None else
            ("s3" if checkpoint_storage == "s3" else default_storage_bytes_per_s()),
            checkpoint_mode, snapshot_s)
    given_ckpt = {"checkpoint_write_bytes_per_s": ckpt_w, "checkpoint_bytes_per_s_per_chip": ckpt_chip,
                  "storage_bytes_per_s": ckpt_storage}
    proxy = rel.chip_mtbf_s is None
    chip_mtbf = _proxy_chip_mtbf_s() if proxy else positive("chip_mtbf_s", rel.chip_mtbf_s)
    inst_mtbf = None if rel.instance_mtbf_s is None else positive("instance_mtbf_s", rel.instance_mtbf_s)
    restart_s = positive("restart_s", rel.restart_s, allow_zero=True)
    compile_s = positive("compile_s", comp.compile_s, allow_zero=True)
    if compile_s > 1e9:
        raise ValueError(f"compile_s must be at most 1e9 s, got {compile_s:g}")
    n_graphs = integer("n_graphs", comp.n_graphs, minimum=1, maximum=1000)
    cache = choice("cache", comp.cache, CACHE_MODES)
    precompile_workers = integer("precompile_workers", comp.precompile_workers, minimum=1, maximum=10_000)
    layout = cluster.layout
    if layout is not None:
        instance("layout", layout, layouts.Layout, "a Layout from layouts.layout(...) or None")
    global_batch = job.global_batch
    if global_batch is None and layout is None:
        global_batch, batch_basis = default_global_batch(job.model, x_tokens)
    elif global_batch is None:
        global_batch, batch_basis = layout.global_batch, "chosen: the layout's"
    else:
        batch_basis = "chosen"
    global_batch = integer("global_batch", global_batch, minimum=1, maximum=10**7)
    if job.recipe_name is not None:
        sizing.recipe(job.recipe_name)
    dtype = job.dtype
    if not isinstance(dtype, str):
        raise ValueError(f"dtype must be a number format such as 'bf16', got {dtype!r}")
    # the system, resolved once: every later step takes its key and chip from here
    system = specs.system(cluster.system if layout is None else layout.cluster.system)
    chip = system.chip
    if dtype not in chip.dense_flops_per_s:
        raise ValueError(f"dtype must be one of {sorted(chip.dense_flops_per_s)} (the number formats with "
                         f"a published peak on {chip.name}); got {dtype!r}")
    min_headroom_fraction = in_range("min_headroom_fraction", ex.min_headroom_fraction, 0.0, 1.0,
                                     high_open=True)
    dp_overlap = layouts.resolve_dp_overlap(ex.dp_overlap)
    mbs = tuple(sorted(set(_as_tuple("micro_batches", ex.micro_batches, integer))))
    zs = tuple(sorted(set(_as_tuple("zero_stages", ex.zero_stages,
                                    lambda n, v: integer(n, v, minimum=0, maximum=3)))))
    modes = _as_tuple("recompute", ex.recompute, lambda n, v: choice(n, v, sizing.RECOMPUTE_MODES))
    if ex.sequence_parallel not in (True, False):
        raise ValueError(f"sequence_parallel must be True or False, got {ex.sequence_parallel!r}")
    max_systems = cluster.max_systems
    if max_systems is None:
        max_systems = 100_000 if layout is not None else math.ceil(MAX_CHIPS / system.n_chips)
    max_systems = integer("max_systems", max_systems, minimum=1, maximum=100_000)
    deadline = None if job.deadline_s is None else positive("deadline_s", job.deadline_s)
    m = layouts.resolve_model(job.model)
    n_systems = cluster.n_systems
    if layout is not None:
        if m != layout.model:
            raise ValueError(f"model must be the layout's model ({layout.model.name}) when a layout is "
                             f"given; got {m.name}")
        if n_systems is not None and integer("n_systems", n_systems, minimum=1) != layout.cluster.n_systems:
            raise ValueError(f"n_systems must match the layout's cluster ({layout.cluster.n_systems}); "
                             f"got {n_systems}")
    elif n_systems is not None:
        n_systems = integer("n_systems", n_systems, minimum=1, maximum=max_systems)
    return _Resolved(m=m, n_tokens=x_tokens, deadline=deadline, global_batch=global_batch,
                     batch_basis=batch_basis, recipe_name=job.recipe_name, dtype=dtype, chip=chip,
                     system=system.key, system_spec=system, n_systems=n_systems, lnc=cluster.lnc, max_systems=max_systems,
                     layout=layout, mfu=mfu, mfu_basis=mfu_basis, ranges=ranges, dp_overlap=dp_overlap,
                     min_headroom_fraction=min_headroom_fraction, mbs=mbs, zs=zs, modes=modes,
                     sequence_parallel=bool(ex.sequence_parallel), ckpt=ckpt, given_ckpt=given_ckpt,
                     chip_mtbf=chip_mtbf, proxy=proxy, inst_mtbf=inst_mtbf, restart_s=restart_s,
                     compile_s=compile_s, n_graphs=n_graphs, cache=cache, precompile_workers=precompile_workers,
                     usd_per_hour=cost.usd_per_hour, usd_per_chip_hour=usd_per_chip_hour,
                     purchase_option=purchase_option, others=others)


def _candidates(r: _Resolved, framework: str | None,
                overlap_setting: str | None) -> list[tuple[frameworks.Framework | None, frameworks.OverlapSchedule]]:
    """Step 2: the (framework, overlap schedule) pairs to plan with (see :func:`plan_run`)."""
    if framework == TEACHING_SEARCH:
        return [(None, frameworks.overlap_schedule(None))]
    if framework is not None:
        fws: tuple = (frameworks.framework(framework),)
    else:
        fws = frameworks.current_frameworks(r.chip.key)
        if r.layout is not None:
            runs = set(frameworks.layout_runnable_by(r.layout))
            fws = tuple(f for f in fws if f.key in runs)
        if not fws:
            if r.layout is not None:
                raise ValueError(f"layout: no framework current on the cited SDK runs {r.layout.label()} "
                                 f"(frameworks.layout_runnable_by: {frameworks.layout_runnable_by(r.layout)}); "
                                 f"pass framework={TEACHING_SEARCH!r} for the teaching search")
            raise ValueError(f"system: no framework current on the cited SDK trains on {r.system}; pass "
                             f"framework={TEACHING_SEARCH!r} for the teaching search")
    out = []
    for f in fws:
        if overlap_setting is not None:
            out.append((f, frameworks.overlap_schedule(f, overlap_setting)))
            continue
        rows = frameworks.overlap_schedules(f)
        # a schedule that places no more behind compute than another of the same framework cannot
        # plan fewer systems or less time (same layouts, same recipe): skip it
        out += [(f, a) for a in rows
                if not any(b.setting != a.setting and b.gather_overlap >= a.gather_overlap
                           and b.reduce_overlap >= a.reduce_overlap for b in rows)]
    # the most overlapping first: its count bounds the others' search
    return sorted(out, key=lambda c: -c[1].reduce_overlap)


def _choose_count(r: _Resolved, fw, sched, recipe_name: str, max_systems: int):
    """Step 3: the count of systems and the search on it: ``(search, tried, bounded)``.

    Fixed by the cluster, else the fewest that fit, else (with a deadline) the fewest whose
    expected wall time meets it: every count from the state's and the perfect-scaling floor up."""
    m, system_key, x_tokens, deadline = r.m, r.system, r.n_tokens, r.deadline
    fw_key = None if fw is None else fw.key
    lnc_used = topology.cluster(r.system_spec, 1, r.lnc).lnc
    args = (r.system_spec, lnc_used, r.global_batch, r.mfu, r.dp_overlap, r.min_headroom_fraction,
            recipe_name, r.dtype, r.mbs, r.zs, r.modes, r.sequence_parallel, fw_key, sched.setting)

    ranks_per_system = topology.cluster(r.system_spec, 1, r.lnc).n_ranks

    def search_at(n: int) -> layouts.Plan | None:
        # a count no degree grid splits the batch over has no layout: skip the planner (exact)
        if not _admits_batch(m, ranks_per_system * n, n, r.global_batch, fw):
            return None
        return _try_search(m, args[0], n, *args[1:])

    if r.n_systems is not None:
        if r.n_systems > max_systems:
            raise ValueError(f"n_systems must be at most max_systems ({max_systems}); got {r.n_systems}")
        search = _search(m, r.system_spec, r.n_systems, *args[1:])
        if search.table.empty:
            raise ValueError(f"n_systems: no layout of {m.name} fits on {r.n_systems} × {system_key} with "
                             f"{r.min_headroom_fraction:.0%} of HBM kept free; add systems or shard more")
        return search, (), 0
    state = sizing.training_state_bytes(m.n_params, sizing.recipe(recipe_name).bytes_per_param)
    system = r.system_spec
    low = max(1, math.ceil(state / system.hbm_bytes_total - 1e-9))
    if low > max_systems:
        raise ValueError(f"max_systems ({max_systems}) is below the {low} systems the state needs")
    if deadline is None:
        # the fewest that fit: every count from the state's lower bound up, in turn
        found, tried_fit = _first(lambda n: search_at(n) is not None, range(low, max_systems + 1))
        if found is None:
            raise ValueError(f"max_systems: no layout of {m.name} fits on up to {max_systems} × {system_key}")
        return search_at(found), tuple(tried_fit), 0
    # 6·N_active·D plus the causal attention scores (the smaller of the two counts the layout model
    # can use): no layout of n systems computes these FLOPs faster than all its chips at the MFU
    n_compute = min(_active_params(m), float(moe._split(m)[2]))
    flops = sizing.training_flops(n_compute, x_tokens, include_attention=True,
                                  n_layers=m.n_layers, seq_len=m.seq_len, d_model=m.d_model)
    ideal_s = sizing.instance_days(flops, r.mfu, system, r.dtype) * day / system.n_instances
    low_t = max(low, math.ceil(ideal_s / deadline - 1e-9))
    if low_t > max_systems:
        raise ValueError(f"deadline_s: even perfect scaling needs {low_t} × {system_key}, more than "
                         f"max_systems ({max_systems})")
    common = (m, system, x_tokens, recipe_name, 1.0, r.ckpt, r.chip_mtbf, r.inst_mtbf, r.restart_s)
    floor_inputs = functools.partial(_run_inputs, *common, 0.0, r.n_graphs, r.cache, r.precompile_workers,
                                     framework=fw_key)
    full_inputs = functools.partial(_run_inputs, *common, r.compile_s, r.n_graphs, r.cache,
                                    r.precompile_workers, framework=fw_key)

    def floor_meets(n: int) -> bool:
        # the wall time at perfect scaling (tokens/s of n systems at the MFU) with the same failures
        # and checkpoints but no compiles: a lower bound on the wall time of every layout of n
        # systems, so a count it rules out cannot meet
        try:
            floor_wall[n] = _economics(x_tokens * n / ideal_s, floor_inputs(n), detail=False)["wall_s"]
        except _NeverFinishes:
            floor_wall[n] = math.inf
        return floor_wall[n] <= deadline

    floor_wall: dict[int, float] = {}
    ruled_out: list[int] = []
    closest: list[tuple[float, int]] = []  # (training time without losses, count) planned

    def meets(n: int) -> bool:
        p = search_at(n)
        if p is None:
            return False
        tokens_per_s = float(p.best.tokens_per_s)  # the fastest layout: the least wall time
        closest.append((x_tokens / tokens_per_s, n))
        # compiles only add time: a count that misses without them misses with them
        if _economics(tokens_per_s, floor_inputs(n), detail=False)["wall_s"] > deadline:
            return False
        try:
            return _economics(tokens_per_s, full_inputs(n), detail=False)["wall_s"] <= deadline
        except _NeverFinishes:
            return False

    # above this count no layout splits the global batch (exact: dp·ep would exceed it)
    top = min(max_systems, _max_systems_splitting(m, ranks_per_system, r.global_batch, fw))

    def candidates():
        for n in range(low_t, top + 1):
            if floor_meets(n):
                yield n
            else:
                ruled_out.append(n)

    found, tried_dl = _first(meets, candidates())
    if found is None:
        # no count meets the deadline: the plan is the count with the least expected wall time (its
        # verdict says "missed"), found exactly: the counts that split the batch, in the order of
        # their floors (lower bounds on their wall times), until a floor reaches the best wall time
        admitted = [n for n in range(low, top + 1)
                    if _admits_batch(m, ranks_per_system * n, n, r.global_batch, fw)]
        for n in admitted:
            if n not in floor_wall:
                floor_meets(n)
        best_wall, best_n = math.inf, None
        for n in sorted(admitted, key=lambda n: (floor_wall[n], n)):
            if floor_wall[n] > best_wall:
                break
            w = _full_wall_s(search_at(n), full_inputs(n))
            if w < math.inf and (best_n is None or (w, n) < (best_wall, best_n)):
                best_wall, best_n = w, n
        if best_n is not None:
            return search_at(best_n), tuple(tried_dl), len(ruled_out) + (low_t - low)
    if found is None:
        why = ("; even at perfect scaling every count either computes too long or loses too much to "
               "failures, checkpoints and restarts")
        if tried_dl and not closest:
            why = (f"; no layout {'of ' + fw.name + ' ' if fw is not None else ''}fits with global batch "
                   f"{r.global_batch} at any count the bound left ({len(tried_dl)} planned)")
        if closest:
            compute_s, n_best = min(closest)
            try:
                e = _economics(x_tokens / compute_s, full_inputs(n_best), detail=False)
                why = (f"; the fastest planned, {n_best} systems, computes for {format_seconds(compute_s)} "
                       f"and loses {e['lost_fraction']:.0%} to failures, checkpoints and restarts "
                       f"({format_seconds(e['wall_s'])} in all)")
            except _NeverFinishes:
                why = f"; at {n_best} systems failures come faster than a checkpoint cycle"
        raise ValueError(f"deadline_s: no count of {system_key} up to max_systems ({max_systems}) "
                         f"finishes {m.name} on {x_tokens:.3g} tokens within {format_seconds(deadline)}{why}")
    return search_at(found), tuple(tried_dl), len(ruled_out) + (low_t - low)


def _full_wall_s(search: layouts.Plan | None, inputs: "_Inputs") -> float:
    """The expected wall time of a search's fastest layout (``inf`` when nothing fits or failures
    outpace a checkpoint cycle)."""
    if search is None:
        return math.inf
    try:
        return _economics(float(search.best.tokens_per_s), inputs, detail=False)["wall_s"]
    except _NeverFinishes:
        return math.inf


def _plan_one(r: _Resolved, fw, sched, max_systems: int | None = None) -> RunPlan:
    """Steps 3 and 4 for one (framework, schedule): its recipe, what it can run, the layout, the plan."""
    recipe_name = r.recipe_name or (fw.recipe if (fw is not None and fw.recipe) else "bf16-adam")
    if fw is not None and fw.train_chips and r.chip.key not in fw.train_chips:
        raise ValueError(f"framework: {fw.name} trains on {', '.join(fw.train_chips)} only "
                         f"({fw.notes.get('train_chips', '')}); the system's chip is {r.chip.key}")
    if r.layout is not None:
        lay = r.layout
        if fw is not None and fw.key not in frameworks.layout_runnable_by(lay):
            raise ValueError(f"layout: {fw.name} cannot run {lay.label()} (ZeRO stages "
                             f"{list(fw.zero_stages)}, pipeline schedules {list(fw.pipeline_schedules) or 'none'})")
        search, tried, bounded = None, (), 0
    else:
        search, tried, bounded = _choose_count(r, fw, sched, recipe_name,
                                               r.max_systems if max_systems is None else max_systems)
        lay = search.layout(0)
    return _assemble(r.m, lay, search, r.n_tokens, r.mfu, r.dp_overlap, r.min_headroom_fraction,
                     r.usd_per_hour, r.purchase_option, r.ckpt, r.chip_mtbf, r.proxy, r.inst_mtbf, r.restart_s,
                     r.compile_s, r.n_graphs, r.cache, r.precompile_workers, r.global_batch, recipe_name,
                     r.dtype, r.deadline, tuple(tried), bounded=bounded, usd_per_chip_hour=r.usd_per_chip_hour,
                     ranges=r.ranges, others=r.others, given_ckpt=r.given_ckpt,
                     framework=None if fw is None else fw.key, batch_basis=r.batch_basis,
                     mfu_basis=r.mfu_basis, schedule=sched)


def plan(job: Job, cluster: ClusterSpec | None = None, execution: Execution | None = None,
         reliability_spec: ReliabilitySpec | None = None, compilation_spec: CompilationSpec | None = None,
         cost: CostSpec | None = None) -> RunPlan:
    """Plan a training run from its specs: a pipeline of small steps.

    1. :func:`_resolve` checks every input once and resolves the model and the system;
    2. :func:`_candidates` lists the (framework, overlap schedule) pairs to plan with;
    3. :func:`_choose_count` finds the count of systems (and the layout search on it) for each;
    4. :func:`_assemble` evaluates the layout and prices failures, compiles and dollars;
    and the plan with the fewest systems, then the least wall time, is kept. :func:`plan_run`
    is the same with keyword arguments (its docstring describes every input).

    Examples
    --------
    >>> p = plan(Job("llama3-8b", 1e11), ClusterSpec(n_systems=1), cost=CostSpec(usd_per_hour=40.0))
    >>> p.framework, p.n_systems
    ('torchneuron', 1)
    """
    if not isinstance(job, Job):
        raise ValueError(f"job must be a planning.Job(model, n_tokens, ...); got {type(job).__name__}")
    cluster = ClusterSpec() if cluster is None else cluster
    for name, value, cls in (("job", job, Job), ("cluster", cluster, ClusterSpec),
                             ("execution", execution, Execution),
                             ("reliability_spec", reliability_spec, ReliabilitySpec),
                             ("compilation_spec", compilation_spec, CompilationSpec), ("cost", cost, CostSpec)):
        if value is not None and not isinstance(value, cls):
            raise ValueError(f"{name} must be a planning.{cls.__name__} (or None); got {type(value).__name__}")
    r = _resolve(job, cluster, execution or Execution(), reliability_spec or ReliabilitySpec(),
                 compilation_spec or CompilationSpec(), cost or CostSpec())
    best, first_error = None, None

    def rank(p: RunPlan) -> tuple:
        # a plan that meets the deadline (or has none): the fewest systems, then the least wall time;
        # after those, one that misses it: the least wall time
        return (0, p.n_systems, p.wall_s) if p.meets_deadline is not False else (1, p.wall_s, p.n_systems)

    for fw, sched in _candidates(r, cluster.framework, cluster.overlap_setting):
        # a later candidate must need no more systems than the plan in hand (if that one meets)
        bound = (best.n_systems if (best is not None and best.meets_deadline is not False
                                    and r.n_systems is None and r.layout is None) else None)
        try:
            p = _plan_one(r, fw, sched, bound)
        except ValueError as e:
            if first_error is None:
                first_error = e
            continue
        if p.meets_deadline is False and r.n_systems is None and r.layout is None:
            p = replace(p, fastest_count=True)   # the search chose the count: none met, the fastest
        if best is None or rank(p) < rank(best):
            best = p
    if best is None:
        raise first_error
    if best.meets_deadline is False and r.n_systems is None and r.layout is None:
        best = replace(best, deadline_alternative=_meets_elsewhere(job, cluster, execution, reliability_spec,
                                                                   compilation_spec, cost, r))
    return best


def _meets_elsewhere(job, cluster, execution, reliability_spec, compilation_spec, cost, r) -> "RunPlan | None":
    """When no count of the system meets the deadline: the plan on the first system of the same chip
    with a larger NeuronLink domain (more chips per system: an UltraServer) that meets it, within the
    same chip budget, or ``None``. Computed by the same search; nothing else changes."""
    own = r.system_spec
    budget = r.max_systems * own.n_chips
    for s in sorted((s for s in specs.systems() if s.chip_key == own.chip_key and s.n_chips > own.n_chips),
                    key=lambda s: s.n_chips):
        alt = replace(cluster, system=s, max_systems=max(1, budget // s.n_chips))  # the record: resolved
        try:
            p = plan(job, alt, execution, reliability_spec, compilation_spec, cost)
        except ValueError:
            continue
        if p.meets_deadline:
            return p
    return None


def plan_run(model: str | ModelPreset, n_tokens: float, *, system: str = "trn2.48xlarge",
             n_systems: int | None = None, deadline_s: float | None = None, lnc: int | None = None,
             mfu: float | None = None, usd_per_hour: float | None = None,
             usd_per_chip_hour: float | None = None, purchase_option: str = "on-demand",
             mfu_range: tuple[float, float] | None = None,
             chip_mtbf_range_s: tuple[float, float] | None = None,
             usd_per_hour_range: tuple[float, float] | None = None,
             other_costs_usd: Mapping[str, float] | None = None,
             checkpoint_write_bytes_per_s: float | None = None,
             checkpoint_read_bytes_per_s: float | None = None,
             checkpoint_bytes_per_s_per_chip: float | None = None, storage_bytes_per_s: float | None = None,
             checkpoint_mode: str = "sync", checkpoint_storage: str = "fsx",
             snapshot_s: float | None = None, chip_mtbf_s: float | None = None,
             instance_mtbf_s: float | None = None, restart_s: float = DEFAULTS["restart_s"],
             compile_s: float = DEFAULTS["compile_s"], n_graphs: int = DEFAULTS["n_graphs"],
             cache: str = "precompiled", precompile_workers: int = DEFAULTS["precompile_workers"],
             global_batch: int | None = None, recipe_name: str | None = None,
             dtype: str = "bfloat16", min_headroom_fraction: float = 0.10, dp_overlap: float | None = None,
             micro_batches: Sequence[int] = (1, 2, 4), zero_stages: Sequence[int] = (0, 1, 2, 3),
             recompute: Sequence[str] = sizing.RECOMPUTE_MODES, sequence_parallel: bool = True,
             max_systems: int | None = None, layout: layouts.Layout | None = None,
             framework: str | None = None, overlap_setting: str | None = None) -> RunPlan:
    """Plan a training run that a framework of the cited Neuron SDK can run: layout, memory, step time, days with losses, instance-hours, cost.

    1. **Layout** (chapter 05): :func:`trainium_lab.layouts.plan` on ``n_systems`` systems with
       these options; its fastest layout that fits is evaluated at ``mfu``. Without
       ``n_systems``: the fewest systems on which a layout fits, or — with ``deadline_s`` — the
       fewest whose expected wall time meets the deadline (doubling, then bisection, from the
       lower bound of chapter 04's perfect-scaling days).
    2. **Sizing** (chapter 04): :func:`trainium_lab.sizing.size_job` of the same job, for the
       state, the fewest chips and the ideal instance-days at ``mfu``.
    3. **Training time**: ``n_tokens / tokens_per_s`` of the layout.
    4. **Failures and checkpoints** (chapter 06): a checkpoint is the weights and optimizer state
       (:func:`checkpoint_bytes`) written at ``checkpoint_write_bytes_per_s``; job MTBF from
       :func:`~trainium_lab.reliability.layout_mtbf_s` (``chip_mtbf_s``, by default the Llama 3
       per-GPU proxy); checkpoint every :func:`~trainium_lab.reliability.optimal_interval_s`; a
       restart costs ``restart_s`` + reading the checkpoint + any recompile; the lost share is
       :func:`~trainium_lab.reliability.lost_fraction`.
    5. **Compiles** (chapter 07): ``n_graphs`` graphs of ``compile_s`` each through
       :func:`~trainium_lab.compilation.run_compiles`: the first launch stalls unless the cache
       was pre-compiled (:func:`~trainium_lab.compilation.parallel_precompile_s` on one
       instance); with per-instance caches a restart on a replacement instance recompiles.
    6. **Dollars**: wall time = first-launch compiles + training time / (1 − lost share);
       instance-hours = instances × wall time (+ pre-compilation on one instance);
       cost = instance-hours × ``usd_per_hour``.

    Parameters
    ----------
    model : str or ModelPreset
        A preset (``"llama3-8b"``...) or :func:`trainium_lab.layouts.custom_model`.
    n_tokens : float
        Training tokens (> 0).
    system : str
        One of :data:`trainium_lab.topology.SYSTEMS`.
    n_systems : int, optional
        Systems (instances or UltraServers); see above when omitted.
    deadline_s : float, optional
        Wall-clock deadline in seconds; used to choose ``n_systems`` when it is not given: the
        fewest that meet it. When no count up to ``max_systems`` does (yet perfect scaling would
        within it), the plan is the count with the least expected wall time, marked
        :attr:`RunPlan.fastest_count`, its verdict "missed", with the plan on a larger NeuronLink
        domain of the same chip that would meet it (:attr:`RunPlan.deadline_alternative`).
    lnc : int, optional
        Logical NeuronCore setting (the chip's default if omitted).
    mfu : float
        Share of peak reached while computing (chapter 05's meaning), in (0, 1]: an assumption.
    usd_per_hour : float, optional
        Price of one billed instance-hour (for an UltraServer, of one of its instances). Default:
        the sourced ``purchase_option`` price of :func:`billed_instance`; there is none for
        Trn2 and Trn3, so give it (an assumption).
    usd_per_chip_hour : float, optional
        The price per chip-hour instead (not with ``usd_per_hour``): times the chips of one billed
        instance (:func:`billing_unit`).
    purchase_option : {"on-demand", "capacity-block", "ri-effective"}
        Billed under its terms (:func:`bill`, ``data/purchase_terms.csv``): Capacity Blocks split
        into blocks AWS sells (at most 182 days, 64 instances each, 256 in all, else refused), a
        reserved rate for whole 365-day terms; the plan's ``billing_note`` says what was done.
    mfu_range, chip_mtbf_range_s, usd_per_hour_range : (low, high), optional
        The uncertain inputs' ranges; the plan's ``days_low/high`` and ``cost_low/high_usd`` take
        the favourable and the unfavourable ends together. Default: the value times
        :data:`SENSITIVITY`'s factors; for the MFU, when ``mfu`` is not given either, the calibrated
        range of ``planner_mfu`` (``data/calibration.csv``).
    other_costs_usd : mapping, optional
        Line items outside the instance-hours (:data:`OTHER_COSTS`: spares, storage, data
        pipeline, evaluation, debugging runs), USD; zero unless given, always listed.
    checkpoint_write_bytes_per_s : float, optional
        Aggregate bandwidth of the whole job to checkpoint storage, if you know it (an
        assumption). Default: :func:`checkpoint_write_bytes_per_s` of the job's chips, which grows
        with the job up to the storage's limit.
    checkpoint_read_bytes_per_s : float, optional
        For the restart's reload; default the write bandwidth.
    checkpoint_bytes_per_s_per_chip, storage_bytes_per_s : float, optional
        The scaling model's inputs (default: Meta's Llama 3 storage per GPU, and the largest FSx
        for Lustre file system HyperPod creates, at the top tier): see :func:`checkpoint_write_bytes_per_s`.
    checkpoint_storage : {"fsx", "s3"}
        The storage behind the default limit (:data:`CHECKPOINT_STORAGES`): ``"fsx"``, the largest FSx
        for Lustre file system HyperPod creates (about 100.8 GB/s, :func:`default_storage_bytes_per_s`); ``"s3", Amazon S3's guaranteed
        request rate per prefix (:func:`trainium_lab.reliability.s3_write_bytes_per_s`, one prefix
        per instance, 5 MiB parts), which grows with the job. ``storage_bytes_per_s`` overrides both.
    checkpoint_mode : {"sync", "async"}
        Chapter 06's modes; ``"async"`` needs ``snapshot_s`` (the blocking copy to host memory).
    chip_mtbf_s, instance_mtbf_s : float, optional
        MTBF of one chip and of one instance (host, NICs...). No Trainium failure rate is
        published: the default chip figure is the Llama 3 per-GPU proxy
        (:func:`trainium_lab.reliability.llama3_summary`).
    restart_s : float
        Seconds from a failure to starting again (detect, replace, launch), before the reload.
    compile_s : float
        Seconds to compile one graph: an assumption (no AWS page gives one for a model).
    n_graphs : int
        Distinct graphs the run compiles (training step, evaluation step, ...).
    cache : {"precompiled", "shared", "local"}
        See :data:`CACHE_MODES`.
    precompile_workers : int
        Parallel compiler processes of the pre-compilation.
    global_batch, recipe_name, dtype, min_headroom_fraction, dp_overlap, micro_batches,
    zero_stages, recompute, sequence_parallel
        As in :func:`trainium_lab.layouts.plan`.
    max_systems : int, optional
        Largest count the search for ``n_systems`` considers (every count up to it is accounted
        for). Default: enough systems for :data:`MAX_CHIPS` (100,000) chips.
    framework : {"torchneuron", "nxd", "jax", "any"}, optional
        Default ``None``: plan with each framework a team can train with today
        (:func:`trainium_lab.frameworks.current_frameworks` on the system's chip: status GA, beta
        or closed beta) under each overlap schedule it documents (``data/overlap_schedules.csv``;
        a schedule that places less behind compute than another of the same framework is
        skipped), and keep the plan with the fewest systems, then the least wall time. A key
        plans with that framework only: what it can run (:func:`trainium_lab.layouts.plan`), with
        its precision recipe (unless ``recipe_name`` is given), its checkpoint contents
        (:func:`checkpoint_bytes`) and its overlap schedule. ``"any"`` (:data:`TEACHING_SEARCH`)
        is the teaching search: every layout the model allows, every data-parallel collective
        behind compute, no framework checked, labelled so in the plan. The plan names its
        framework, status and flags (:attr:`RunPlan.framework_text`, :func:`launch_environment`).
        Every current framework keeps each TP group inside one system's NeuronLink domain
        (``tp_domain`` of ``data/frameworks.csv``: TP collectives are not overlapped with compute);
        only the teaching search puts TP over EFA, and its :attr:`RunPlan.framework_text` says so.
    overlap_setting : str, optional
        Fix the framework's schedule (``"compiler-default"``, ``"token-threading"``).
    layout : trainium_lab.layouts.Layout, optional
        Evaluate this layout instead of searching (its model and cluster are used).

    Returns
    -------
    RunPlan

    Raises
    ------
    ValueError
        Naming the parameter: bad values, no layout that fits
        on ``n_systems`` (or on up to ``max_systems``), a deadline no count meets.

    References
    ----------
    The composed chapters' functions and their sources (module docstring).

    Examples
    --------
    Chapter 05's 405B case, two Trn2 UltraServers, one trillion tokens, priced at an assumed
    40 USD per trn2u.48xlarge instance-hour — far too few chips for that budget:

    >>> p = plan_run("llama3-405b", 1e12, system="trn2-ultraserver", n_systems=2, lnc=2,
    ...              usd_per_hour=40.0)
    >>> p.framework_text
    'JAX on Neuron (jax-neuronx), beta; overlap token-threading (flags: NEURON_FSDP=1 NEURON_FSDP_CC_MULTISTREAM=1)'
    >>> p.layout.label()
    'TP64 ranks = 16 chips × PP1×DP8 ZeRO-3 mb1×128 selective'
    >>> round(p.days), p.n_instances, f"{p.cost_usd:.3g}"
    (1281, 8, '9.84e+06')

    The same plan built from the specs (:func:`plan`):

    >>> q = plan(Job("llama3-405b", 1e12), ClusterSpec("trn2-ultraserver", n_systems=2, lnc=2),
    ...          cost=CostSpec(usd_per_hour=40.0))
    >>> q.cost_usd == p.cost_usd
    True
    """
    return plan(
        Job(model, n_tokens, deadline_s=deadline_s, global_batch=global_batch, recipe_name=recipe_name,
            dtype=dtype),
        ClusterSpec(system, n_systems=n_systems, lnc=lnc, max_systems=max_systems, framework=framework,
                    overlap_setting=overlap_setting, layout=layout),
        Execution(mfu=mfu, mfu_range=mfu_range, dp_overlap=dp_overlap, min_headroom_fraction=min_headroom_fraction,
                  micro_batches=micro_batches, zero_stages=zero_stages, recompute=recompute,
                  sequence_parallel=sequence_parallel),
        ReliabilitySpec(checkpoint_write_bytes_per_s=checkpoint_write_bytes_per_s,
                        checkpoint_read_bytes_per_s=checkpoint_read_bytes_per_s,
                        checkpoint_bytes_per_s_per_chip=checkpoint_bytes_per_s_per_chip,
                        storage_bytes_per_s=storage_bytes_per_s, checkpoint_mode=checkpoint_mode,
                        checkpoint_storage=checkpoint_storage, snapshot_s=snapshot_s, chip_mtbf_s=chip_mtbf_s,
                        chip_mtbf_range_s=chip_mtbf_range_s, instance_mtbf_s=instance_mtbf_s, restart_s=restart_s),
        CompilationSpec(compile_s=compile_s, n_graphs=n_graphs, cache=cache, precompile_workers=precompile_workers),
        CostSpec(usd_per_hour=usd_per_hour, usd_per_chip_hour=usd_per_chip_hour, purchase_option=purchase_option,
                 usd_per_hour_range=usd_per_hour_range, other_costs_usd=other_costs_usd))


def _assemble(m, lay, search, n_tokens, mfu, dp_overlap, min_headroom_fraction, usd_per_hour,
              purchase_option, ckpt, chip_mtbf, proxy, inst_mtbf,
              restart_s, compile_s, n_graphs, cache, precompile_workers, global_batch, recipe_name,
              dtype, deadline, tried, sensitivity: bool = True, bounded: int = 0,
              usd_per_chip_hour: float | None = None, ranges: dict | None = None,
              others: dict | None = None, given_ckpt: dict | None = None,
              framework: str | None = None, batch_basis: str = "chosen",
              mfu_basis: str = "assumption", schedule: frameworks.OverlapSchedule | None = None) -> RunPlan:
    schedule = frameworks.overlap_schedule(None) if schedule is None else schedule
    c = lay.cluster
    s = c.system_spec
    inst_type, per_system = billed_instance(s)
    unit_name, chips_per_instance, _ = billing_unit(s)
    n_instances = c.n_systems * per_system
    if usd_per_hour is None and usd_per_chip_hour is not None:
        usd = usd_per_chip_hour * chips_per_instance
        basis = f"input (assumption): {usd_per_chip_hour:g} USD per chip-hour × {chips_per_instance} chips"
    elif usd_per_hour is None:
        try:
            pr = price(inst_type, purchase_option)
        except ValueError:  # no published price (Trn2, Trn3): a labelled placeholder, not a price
            usd = parity_usd_per_hour(c.system)
            basis = (f"placeholder, not a price: no sourced {purchase_option} price for {inst_type}; parity "
                     "with p5.48xlarge's on-demand USD per dense peak FLOP/s (give usd_per_hour)")
        else:
            usd = pr.usd_per_hour
            basis = f"sourced: {pr.purchase_option}, {pr.region}, {pr.date} ({pr.source}, tier {pr.tier})"
    else:
        usd = positive("usd_per_hour", usd_per_hour)
        basis = "input (assumption)"
    x = _run_inputs(m, s, n_tokens, recipe_name, usd, ckpt,
                    chip_mtbf, inst_mtbf, restart_s, compile_s, n_graphs, cache, precompile_workers,
                    c.n_systems, framework=framework).replace(seq_len=lay.seq_len)
    est = layouts.evaluate(lay, mfu=mfu, dp_overlap=dp_overlap, min_headroom_fraction=min_headroom_fraction,
                           overlap_schedule=schedule)
    results = _economics(est.tokens_per_s, x)
    others = {k: 0.0 for k in OTHER_COSTS} if others is None else dict(others)
    other_usd = float(sum(others.values()))

    def billed(res: dict, price_usd: float) -> tuple[Billing, float, float]:
        # the purchase option's terms on the instances held; pre-compilation on one instance, hourly
        b = bill(purchase_option, res["wall_s"], n_instances)
        hours = b.billed_instance_hours + res["precompile_s"] / _SECONDS_PER_HOUR
        return b, hours, hours * price_usd

    billing, billed_h, cost = billed(results, usd)
    results.update({"billed_instance_hours": billed_h, "n_purchases": float(billing.n_purchases),
                    "cost_usd": cost, "cost_per_million_tokens_usd": cost / n_tokens * 1e6,
                    "other_costs_usd": other_usd, "total_cost_usd": cost + other_usd})
    # ranges: the favourable and the unfavourable ends of MFU, failure rate and price together
    ranges = {} if ranges is None else dict(ranges)
    lo_f = {k: SENSITIVITY[k][0] for k in ("mfu", "chip_mtbf_s", "usd_per_hour")}
    hi_f = {k: SENSITIVITY[k][1] for k in ("mfu", "chip_mtbf_s", "usd_per_hour")}
    centre = {"mfu": mfu, "chip_mtbf_s": chip_mtbf, "usd_per_hour": usd}
    span = {k: ranges.get(k) or (centre[k] * lo_f[k], min(1.0, centre[k] * hi_f[k]) if k == "mfu"
                                  else centre[k] * hi_f[k]) for k in centre}
    ends = []
    for m_v, t_v, p_v in ((span["mfu"][1], span["chip_mtbf_s"][1], span["usd_per_hour"][0]),
                          (span["mfu"][0], span["chip_mtbf_s"][0], span["usd_per_hour"][1])):
        e = layouts.evaluate(lay, mfu=m_v, dp_overlap=dp_overlap, min_headroom_fraction=min_headroom_fraction,
                             overlap_schedule=schedule)
        try:
            r = _economics(e.tokens_per_s, x.replace(chip_mtbf_s=t_v), detail=False)
            ends.append((r["wall_s"] / day, billed(r, p_v)[2] + other_usd))
        except _NeverFinishes:  # at that end of the failure rate the job never finishes
            ends.append((math.inf, math.inf))
    results.update({"days_low": ends[0][0], "days_high": ends[1][0],
                    "cost_low_usd": ends[0][1], "cost_high_usd": ends[1][1]})
    # memory follows the total, compute the parameters a token uses (chapter 10)
    size = sizing.size_job(m.n_params, n_tokens, system=s, recipe_name=recipe_name, mfu=mfu, dtype=dtype,
                           n_active_params=_active_params(m))
    table = _sensitivity(lay, est, x, mfu, dp_overlap, min_headroom_fraction, results,
                         lambda r, p: billed(r, p)[2], schedule) if sensitivity \
        else pd.DataFrame()
    inputs = {"mfu": mfu, "usd_per_hour": usd, "purchase_option": purchase_option,
              "checkpoint_write_bytes_per_s": x.checkpoint_write_bytes_per_s,
              "checkpoint_read_bytes_per_s": x.checkpoint_read_bytes_per_s,
              "checkpoint_bandwidth_given": ckpt[0] is not None,
              "checkpoint_bytes_per_s_per_chip": ckpt[2],
              "storage_bytes_per_s": (reliability.s3_write_bytes_per_s(n_instances) if ckpt[3] == "s3"
                                      else ckpt[3]),
              "checkpoint_storage": "s3" if ckpt[3] == "s3" else (
                  "given" if given_ckpt and given_ckpt.get("storage_bytes_per_s") is not None else "fsx"),
              "checkpoint_mode": x.checkpoint_mode, "snapshot_s": x.snapshot_s, "chip_mtbf_s": chip_mtbf,
              "chip_mtbf_is_proxy": proxy, "instance_mtbf_s": inst_mtbf, "restart_s": restart_s,
              "compile_s": compile_s, "n_graphs": n_graphs, "cache": cache,
              "precompile_workers": precompile_workers, "global_batch": global_batch,
              "global_batch_basis": batch_basis, "mfu_basis": mfu_basis,
              "recipe_name": recipe_name, "dtype": dtype, "min_headroom_fraction": min_headroom_fraction,
              "dp_overlap": dp_overlap, "usd_per_chip_hour": usd / chips_per_instance,
              "chips_per_instance": chips_per_instance, "billing_unit": unit_name,
              "mfu_range": span["mfu"], "chip_mtbf_range_s": span["chip_mtbf_s"],
              "usd_per_hour_range": span["usd_per_hour"], "other_costs_usd": others,
              "framework": framework, "overlap_setting": schedule.setting,
              "overlap_flags": schedule.flags, "gather_overlap": schedule.gather_overlap,
              "reduce_overlap": schedule.reduce_overlap, "overlap_experimental": schedule.experimental,
              "framework_status": None if framework is None else frameworks.status_text(framework),
              "framework_current": None if framework is None else frameworks.is_current(framework)}
    given = given_ckpt or {"checkpoint_write_bytes_per_s": ckpt[0]}
    assumptions = ("mfu",) + tuple(k for k, v in given.items() if v is not None) \
        + ("restart_s", "compile_s", "n_graphs") \
        + (("usd_per_hour",) if usd_per_hour is not None else ()) \
        + (() if proxy else ("chip_mtbf_s",)) + (("instance_mtbf_s",) if inst_mtbf is not None else ())
    return RunPlan(model=m, n_tokens=n_tokens, system=c.system, n_systems=c.n_systems, lnc=c.lnc,
                   n_chips=c.n_chips, n_instances=n_instances, instance_type=inst_type, inputs=inputs,
                   assumptions=assumptions, price_basis=basis, sizing=size, layout=lay, estimate=est,
                   search=search, results=results, sensitivity=table, deadline_s=deadline,
                   systems_tried=tuple(tried), systems_bounded=bounded, billing=billing)


def _sensitivity(lay, est, x: _Inputs, mfu: float, dp_overlap: float, headroom: float,
                 base: dict, price_of: Callable[[dict, float], float], schedule=None) -> pd.DataFrame:
    """Cost and days with each uncertain input moved by :data:`SENSITIVITY` (layout kept).

    ``price_of(results, usd_per_hour)`` prices a run the way the plan does (the purchase option's
    terms: whole Capacity Blocks or reserved terms, not instance-hours × rate)."""
    rows = []
    values = {"mfu": mfu, "usd_per_hour": x.usd_per_hour, "chip_mtbf_s": x.chip_mtbf_s,
              "checkpoint_write_bytes_per_s": x.checkpoint_write_bytes_per_s,
              "restart_s": x.restart_s, "compile_s": x.compile_s}
    for name, (lo, hi) in SENSITIVITY.items():
        out = []
        for f in (lo, hi):
            v = values[name] * f
            if name == "mfu":
                v = min(v, 1.0)
                e = layouts.evaluate(lay, mfu=v, dp_overlap=dp_overlap, min_headroom_fraction=headroom,
                                     overlap_schedule=schedule)
                r = _economics(e.tokens_per_s, x, detail=False)
            elif name == "checkpoint_write_bytes_per_s":
                read = x.checkpoint_read_bytes_per_s * f  # a reload reads the same storage
                r = _economics(est.tokens_per_s, x.replace(checkpoint_write_bytes_per_s=v, checkpoint_read_bytes_per_s=read),
                               detail=False)
            else:
                try:
                    r = _economics(est.tokens_per_s, x.replace(**{name: v}), detail=False)
                except _NeverFinishes:
                    r = {"cost_usd": math.inf, "wall_s": math.inf}
            price_usd = v if name == "usd_per_hour" else x.usd_per_hour
            # a run that outlasts any purchase (beyond 1e18 s) costs without bound at that end
            cost = r["cost_usd"] if not r["wall_s"] <= 1e18 else price_of(r, price_usd)
            out.append((v, cost, r["wall_s"] / day))
        (vl, cl, dl), (vh, ch, dh) = out
        rows.append({"input": name, "value": values[name], "low_value": vl, "high_value": vh,
                     "cost_low_usd": cl, "cost_high_usd": ch, "days_low": dl, "days_high": dh,
                     "swing_usd": abs(ch - cl)})
    df = pd.DataFrame(rows).sort_values("swing_usd", ascending=False, kind="stable")
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------- serving


@dataclass(frozen=True, repr=False)
class ServingPlan:
    """Chips for a serving target. Build it with :func:`plan_serving`; base units.

    Attributes
    ----------
    model : ModelPreset
    system : str
        The instance type (one system) replicas are packed into.
    target_tokens_per_s : float
        Output tokens per second the service must sustain.
    replica : trainium_lab.serving.Replica
        The chosen replica (``tp`` ranks of one instance).
    concurrency : int
        Sequences each replica decodes at once.
    stream : trainium_lab.serving.StreamEstimate
        TTFT, TPOT and tokens/s of one replica at that concurrency.
    n_replicas, replicas_per_instance, n_instances, n_chips : int
    usd_per_hour : float
        Per instance-hour; ``price_basis`` says where it comes from.
    candidates : pandas.DataFrame
        Every (tp, concurrency) evaluated: ``tp, chips_per_replica, concurrency, max_sequences,
        ttft_s, tpot_s, tokens_per_s, tokens_per_s_per_chip, meets_latency``.
    """

    model: ModelPreset
    system: str
    target_tokens_per_s: float
    prompt_tokens: int
    output_tokens: int
    tpot_s_max: float
    ttft_s_max: float
    replica: serving.Replica
    concurrency: int
    stream: serving.StreamEstimate
    n_replicas: int
    replicas_per_instance: int
    n_instances: int
    usd_per_hour: float
    price_basis: str
    candidates: pd.DataFrame

    @property
    def n_chips(self) -> int:
        """Chips of the instances held."""
        return self.n_instances * specs.system(self.system).n_chips

    @property
    def capacity_tokens_per_s(self) -> float:
        """Output tokens/s all replicas give at the chosen concurrency."""
        return self.n_replicas * self.stream.tokens_per_s

    @property
    def usd_per_hour_total(self) -> float:
        """What the instances cost per hour."""
        return self.n_instances * self.usd_per_hour

    @property
    def cost_per_million_tokens_usd(self) -> float:
        """Cost per million generated tokens when serving exactly the target."""
        return self.usd_per_hour_total / (self.target_tokens_per_s * _SECONDS_PER_HOUR) * 1e6

    @property
    def cost_per_million_tokens_at_capacity_usd(self) -> float:
        """Cost per million generated tokens if every replica ran full."""
        return self.usd_per_hour_total / (self.capacity_tokens_per_s * _SECONDS_PER_HOUR) * 1e6

    def __repr__(self) -> str:
        return (f"ServingPlan({self.model.name!r}, {self.target_tokens_per_s:,.0f} tokens/s, {self.n_replicas} × "
                f"TP{self.replica.tp} at {self.concurrency} sequences, {self.n_instances} × {self.system}, "
                f"{self.cost_per_million_tokens_usd:,.3f} USD per million tokens)")

    def _repr_markdown_(self) -> str:
        s = self.stream
        return (f"**{self.model.name}** at {self.target_tokens_per_s:,.0f} output tokens/s "
                f"(TPOT ≤ {format_seconds(self.tpot_s_max)}, TTFT ≤ {format_seconds(self.ttft_s_max)}): "
                f"**{self.n_replicas} replicas** of TP{self.replica.tp} at {self.concurrency} sequences each "
                f"(TPOT {format_seconds(s.tpot_s)}, TTFT {format_seconds(s.ttft_s)}) on **{self.n_instances} × "
                f"{self.system}**; {self.usd_per_hour_total:,.2f} USD/h, **{self.cost_per_million_tokens_usd:,.3f} "
                f"USD per million generated tokens** (price: {self.price_basis})")


def plan_serving(model: str | ModelPreset, target_tokens_per_s: float, *, prompt_tokens: int = 1024,
                 output_tokens: int = 256, tpot_s_max: float = 0.05, ttft_s_max: float = 1.0,
                 system: str = "trn2.48xlarge", lnc: int | None = None, usd_per_hour: float | None = None,
                 purchase_option: str = "on-demand", prefill_efficiency: float | None = None,
                 kv_dtype: str = "bfloat16", max_concurrency: int = 1024) -> ServingPlan:
    """Chips and cost for a serving target: throughput under TPOT and TTFT limits (chapter 09).

    For each tensor-parallel degree that splits the model's heads and fits in one instance, and
    each concurrency (powers of two up to what :func:`trainium_lab.serving.capacity` lets a replica
    hold at ``prompt + output`` tokens), :func:`trainium_lab.serving.serve_stream` gives TTFT, TPOT
    and tokens/s. Among the settings within both limits the one with the most tokens/s per chip
    wins; replicas = ⌈target / tokens/s of one replica⌉, packed ⌊ranks per instance / tp⌋ to an
    instance. Cost per million generated tokens = instances × price / (target × 3,600) × 10⁶.

    Parameters
    ----------
    model : str or ModelPreset
    target_tokens_per_s : float
        Output tokens per second to sustain (> 0).
    prompt_tokens, output_tokens : int
        Per request.
    tpot_s_max, ttft_s_max : float
        Latency limits (seconds, > 0).
    system : str
        An instance type of ``data/systems.csv`` (replicas live inside one instance).
    lnc : int, optional
    usd_per_hour : float, optional
        Price of one instance-hour; default the sourced ``purchase_option`` price (none for Trn2).
    prefill_efficiency : float, optional
        Share of peak a prefill reaches, in (0, 1]; by default the calibrated ``prefill_efficiency``
        of ``data/calibration.csv`` (fitted on AWS's NxD Inference Trn2 TTFTs, chapter 09).
    kv_dtype : str
    max_concurrency : int
        Largest batch tried.

    Returns
    -------
    ServingPlan

    Raises
    ------
    ValueError
        Naming the parameter; ``tpot_s_max`` when no setting meets the latency limits.

    References
    ----------
    Chapter 09's functions (:mod:`trainium_lab.serving`) and their sources: Kwon et al. 2023
    (vLLM), Yu et al. 2022 (Orca), the AWS Neuron NxD Inference and vLLM Neuron guides.

    Examples
    --------
    >>> s = plan_serving("llama3-8b", 20_000, usd_per_hour=40.0)
    >>> s.replica.tp, s.concurrency, s.n_replicas, s.n_instances
    (8, 128, 6, 1)
    >>> round(s.cost_per_million_tokens_usd, 3)
    0.556
    """
    m = layouts.resolve_model(model)
    target = positive("target_tokens_per_s", target_tokens_per_s)
    p = integer("prompt_tokens", prompt_tokens, minimum=1, maximum=10**7)
    o = integer("output_tokens", output_tokens, minimum=1, maximum=10**7)
    tpot_max = positive("tpot_s_max", tpot_s_max)
    ttft_max = positive("ttft_s_max", ttft_s_max)
    sysm = specs.system(system)
    if sysm.n_instances != 1:
        raise ValueError(f"system must be an instance type (replicas live in one instance), got {system!r}")
    purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
    eff = (None if prefill_efficiency is None
           else in_range("prefill_efficiency", prefill_efficiency, 0.0, 1.0, low_open=True))
    max_conc = integer("max_concurrency", max_concurrency, minimum=1, maximum=10**6)
    chip = sysm.chip_key
    lnc_used = cores.resolve_lnc(chip, lnc)
    per_instance = sysm.n_chips * cores.logical_cores_per_chip(chip, lnc_used)
    if usd_per_hour is None:
        pr = price(billed_instance(sysm.key)[0], purchase_option)
        usd, basis = pr.usd_per_hour, f"sourced: {pr.purchase_option}, {pr.region}, {pr.date} (tier {pr.tier})"
    else:
        usd, basis = positive("usd_per_hour", usd_per_hour), "input (assumption)"
    rows, best = [], None
    for tp in (t for t in range(1, per_instance + 1) if per_instance % t == 0 and m.n_heads % t == 0):
        rep = serving.replica(m, chip, tp=tp, lnc=lnc_used, kv_dtype=kv_dtype)
        cap = serving.capacity(rep, p + o).max_sequences
        concs = sorted({c for c in (2 ** k for k in range(21)) if c <= min(cap, max_conc)}
                       | ({min(cap, max_conc)} if cap else set()))
        for conc in concs:
            st = serving.serve_stream(rep, p, o, conc, eff, system=sysm.key)
            ok = st.tpot_s <= tpot_max and st.ttft_s <= ttft_max
            rows.append({"tp": tp, "chips_per_replica": float(rep.n_chips), "concurrency": conc,
                         "max_sequences": cap, "ttft_s": st.ttft_s, "tpot_s": st.tpot_s,
                         "tokens_per_s": st.tokens_per_s, "tokens_per_s_per_chip": st.tokens_per_s_per_chip,
                         "meets_latency": ok})
            if ok and (best is None or st.tokens_per_s_per_chip > best[2].tokens_per_s_per_chip):
                best = (rep, conc, st)
    candidates = pd.DataFrame(rows)
    if best is None:
        raise ValueError(f"tpot_s_max: no tensor-parallel degree and batch of {m.name} on {sysm.key} meets "
                         f"TPOT ≤ {tpot_max:g} s and TTFT ≤ {ttft_max:g} s; relax the limits or use a "
                         "faster system")
    rep, conc, st = best
    n_rep = math.ceil(target / st.tokens_per_s - 1e-12)
    per_inst = per_instance // rep.tp
    n_inst = math.ceil(n_rep / per_inst)
    return ServingPlan(m, sysm.key, target, p, o, tpot_max, ttft_max, rep, conc, st, n_rep, per_inst,
                       n_inst, usd, basis, candidates)


# --------------------------------------------------------------------------- comparison


def _mapping(name: str, value, item) -> dict:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"{name} must be a non-empty mapping of platform names to numbers, "
                         f"e.g. {{'trn2.48xlarge': 0.4}}; got {value!r}"[:160])
    return {k: item(f"{name}[{k!r}]", v) for k, v in value.items()}


def compare_platforms(n_params: float, n_tokens: float, mfu: Mapping[str, float],
                      usd_per_chip_hour: Mapping[str, float] | None = None, *,
                      purchase_option: str = "on-demand", dtype: str = "bfloat16",
                      reference: str | None = None) -> pd.DataFrame:
    """The same training job on several platforms, as cost per trained token.

    One formula for every platform, chapter 04's: accelerator-hours = 6ND / (peak × MFU) / 3,600
    (:func:`trainium_lab.sizing.training_flops`), cost = accelerator-hours × price per
    accelerator-hour. Every MFU is an input you set (there is no default: a platform's MFU is the
    biggest lever and the least known); prices come from ``usd_per_chip_hour`` or, failing that,
    from the sourced instance price ÷ accelerators per instance. Perfect scaling is assumed for
    all alike, so the count of instances does not change the cost.

    Parameters
    ----------
    n_params, n_tokens : float
    mfu : mapping
        Platform (a key of :func:`platforms`) → MFU in (0, 1]. The rows follow its order.
    usd_per_chip_hour : mapping, optional
        Platform → price per accelerator-hour (an assumption). Required for platforms without a
        sourced price, else their cost is NaN.
    purchase_option : str
        Which sourced price to use.
    dtype : str
        The peak rate's number format (every platform must list it).
    reference : str, optional
        A priced platform of ``mfu``: adds ``parity_usd_per_chip_hour``, the price at which each
        platform would cost the same per token as the reference at these MFUs.

    Returns
    -------
    pandas.DataFrame
        ``platform, family, accelerator, accelerator_name, peak_flops_per_s, mfu, chip_hours,
        usd_per_chip_hour, price_basis, cost_usd, cost_per_million_tokens_usd,
        parity_usd_per_chip_hour``.

    Examples
    --------
    >>> t = compare_platforms(8e9, 1e12, {"trn2.48xlarge": 0.4, "p5.48xlarge": 0.4},
    ...                       reference="p5.48xlarge")
    >>> t.platform.tolist(), round(float(t.chip_hours.iloc[0]))
    (['trn2.48xlarge', 'p5.48xlarge'], 49975)
    >>> round(float(t.parity_usd_per_chip_hour.iloc[0]), 2)   # 6.88 × 667 / 989
    4.64
    """
    flops = sizing.training_flops(n_params, n_tokens)
    table = _platforms().set_index("platform")
    known = tuple(table.index)
    mfus = _mapping("mfu", mfu, lambda n, v: in_range(n, v, 0.0, 1.0, low_open=True))
    for k in mfus:
        choice("mfu", k, known)
    given = {} if usd_per_chip_hour is None else _mapping("usd_per_chip_hour", usd_per_chip_hour, positive)
    for k in given:
        choice("usd_per_chip_hour", k, known)
    purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
    if reference is not None:
        reference = choice("reference", reference, tuple(mfus))
    rows = []
    for name, u in mfus.items():
        t = table.loc[name]
        peak = _peak(t.accelerator, dtype)
        chip_hours = flops / (peak * u) / _SECONDS_PER_HOUR
        if name in given:
            p, basis = given[name], "input (assumption)"
        else:
            try:
                pr = price(t.billed_as, purchase_option)
                p = pr.usd_per_accelerator_hour
                basis = f"sourced: {pr.purchase_option}, {pr.region}, {pr.date} (tier {pr.tier})"
            except ValueError:
                p, basis = math.nan, "no public price: give usd_per_chip_hour"
        rows.append({"platform": name, "family": t.family, "accelerator": t.accelerator,
                     "accelerator_name": t.accelerator_name, "peak_flops_per_s": peak, "mfu": u,
                     "chip_hours": chip_hours, "usd_per_chip_hour": p, "price_basis": basis,
                     "cost_usd": chip_hours * p, "cost_per_million_tokens_usd": chip_hours * p / n_tokens * 1e6})
    df = pd.DataFrame(rows)
    df["parity_usd_per_chip_hour"] = math.nan
    if reference is not None:
        ref = df[df.platform == reference].iloc[0]
        if not math.isfinite(ref.usd_per_chip_hour):
            raise ValueError(f"reference must have a price (sourced or in usd_per_chip_hour); {reference!r} has none")
        df["parity_usd_per_chip_hour"] = (ref.usd_per_chip_hour * df.peak_flops_per_s * df.mfu
                                          / (ref.peak_flops_per_s * ref.mfu))
    return df


@dataclass(frozen=True, repr=False)
class ClaimCheck:
    """What a price-performance claim implies at given MFUs (:func:`check_price_claim`).

    Attributes
    ----------
    claim_id, claim, source, subject, baseline, metric : str
    claimed_low, claimed_high : float
    can_check : bool
        Whether the data holds what the check needs (``missing`` lists what it lacks).
    baseline_usd_per_hour : float or None
        Sourced price of the baseline instance (``baseline_price_date`` its date).
    parity_usd_per_hour : float or None
        Subject instance price at which both cost the same per token at these MFUs.
    max_usd_per_hour_low, max_usd_per_hour_high : float or None
        Highest subject price at which the claim's low (high) end holds.
    subject_usd_per_hour : float or None
        The subject's price, given or sourced.
    achieved : float or None
        The claim's metric at that price (``price_performance_ratio`` or ``cost_ratio``).
    holds : bool or None
        Whether the claim's low end holds at that price (None if it cannot be said).
    missing : tuple of str
    """

    claim_id: str
    claim: str
    source: str
    subject: str
    baseline: str
    metric: str
    claimed_low: float
    claimed_high: float
    mfu_subject: float
    mfu_baseline: float
    can_check: bool
    baseline_usd_per_hour: float | None
    baseline_price_date: str | None
    parity_usd_per_hour: float | None
    max_usd_per_hour_low: float | None
    max_usd_per_hour_high: float | None
    subject_usd_per_hour: float | None
    achieved: float | None
    holds: bool | None
    missing: tuple[str, ...]

    def __repr__(self) -> str:
        if not self.can_check:
            return f"ClaimCheck({self.claim_id!r}, cannot check: lacks {', '.join(self.missing)})"
        return (f"ClaimCheck({self.claim_id!r}, parity {self.parity_usd_per_hour:,.2f} USD/h, claim needs at most "
                f"{self.max_usd_per_hour_low:,.2f}-{self.max_usd_per_hour_high:,.2f} USD/h, holds={self.holds})")

    def _repr_markdown_(self) -> str:
        if not self.can_check:
            return f"**{self.claim}** — cannot be checked with the course's data: lacks {', '.join(self.missing)}."
        text = (f"**{self.claim}** — at MFU {self.mfu_subject:.0%} ({self.subject}) against "
                f"{self.mfu_baseline:.0%} ({self.baseline}, {self.baseline_usd_per_hour:,.2f} USD/h, "
                f"{self.baseline_price_date}): equal cost per token at **{self.parity_usd_per_hour:,.2f} USD/h**; "
                f"the claim needs {self.subject} at most **{self.max_usd_per_hour_low:,.2f}–"
                f"{self.max_usd_per_hour_high:,.2f} USD/h**")
        if self.achieved is not None:
            text += f"; at {self.subject_usd_per_hour:,.2f} USD/h the {self.metric} is {self.achieved:.2f}"
        return text + "."


def price_claims() -> pd.DataFrame:
    """The published price-performance claims of ``data/price_claims.csv`` with their sources.

    Examples
    --------
    >>> price_claims().claim_id.tolist()
    ['trn2-price-performance', 'trn1-cost-to-train']
    """
    return specs.read_data_csv("price_claims.csv")


def check_price_claim(claim_id: str, *, mfu_subject: float, mfu_baseline: float,
                      subject_usd_per_hour: float | None = None, purchase_option: str = "on-demand",
                      dtype: str = "bfloat16") -> ClaimCheck:
    """What a price-performance claim implies: the hourly price Trainium must have for it to hold.

    Tokens per dollar scale with ``chips × peak × MFU / price`` (the 6ND model of
    :func:`compare_platforms`). With the baseline's sourced price ``P_b`` the subject costs the same
    per token at ``P_parity = P_b × (chips_s × peak_s × MFU_s) / (chips_b × peak_b × MFU_b)``. A
    price-performance ratio of at least ``r`` needs a subject price ``≤ P_parity / r``; a cost
    ratio of at most ``c`` needs ``≤ P_parity × c``.

    Parameters
    ----------
    claim_id : str
        A ``claim_id`` of :func:`price_claims`.
    mfu_subject, mfu_baseline : float
        MFUs you expect on each (in (0, 1]): the claim says nothing about them.
    subject_usd_per_hour : float, optional
        The subject's price if you have one (an assumption, or a quote); default a sourced price.
    purchase_option : str
    dtype : str

    Examples
    --------
    >>> c = check_price_claim("trn2-price-performance", mfu_subject=0.4, mfu_baseline=0.4)
    >>> round(c.parity_usd_per_hour, 2), round(c.max_usd_per_hour_low, 2), c.holds
    (85.38, 65.67, None)
    >>> check_price_claim("trn1-cost-to-train", mfu_subject=0.4, mfu_baseline=0.4).can_check
    False
    """
    df = price_claims()
    claim_id = choice("claim_id", claim_id, tuple(df["claim_id"]))
    row = df[df["claim_id"] == claim_id].iloc[0]
    mfu_s = in_range("mfu_subject", mfu_subject, 0.0, 1.0, low_open=True)
    mfu_b = in_range("mfu_baseline", mfu_baseline, 0.0, 1.0, low_open=True)
    purchase_option = choice("purchase_option", purchase_option, PURCHASE_OPTIONS)
    given = None if subject_usd_per_hour is None else positive("subject_usd_per_hour", subject_usd_per_hour)
    plats = _platforms().set_index("platform")
    missing = []

    def rate(inst: str) -> float | None:
        if inst in plats.index:
            t = plats.loc[inst]
            return float(t.chips_per_platform / t.instances * _peak(t.accelerator, dtype))
        missing.append(f"accelerator figures of {inst}")
        return None

    r_s, r_b = rate(row.subject), rate(row.baseline)
    try:
        base_price = price(row.baseline, purchase_option)
    except ValueError:
        base_price = None
        missing.append(f"a sourced {purchase_option} price of {row.baseline}")
    subject_price = given
    if subject_price is None:
        try:
            subject_price = price(row.subject, purchase_option).usd_per_hour
        except ValueError:
            subject_price = None
    common = dict(claim_id=claim_id, claim=row.claim, source=row.source, subject=row.subject,
                  baseline=row.baseline, metric=row.metric, claimed_low=float(row.claimed_low),
                  claimed_high=float(row.claimed_high), mfu_subject=mfu_s, mfu_baseline=mfu_b)
    if missing:
        return ClaimCheck(**common, can_check=False, baseline_usd_per_hour=None, baseline_price_date=None,
                          parity_usd_per_hour=None, max_usd_per_hour_low=None, max_usd_per_hour_high=None,
                          subject_usd_per_hour=subject_price, achieved=None, holds=None, missing=tuple(missing))
    parity = float(base_price.usd_per_hour * (r_s * mfu_s) / (r_b * mfu_b))
    lo, hi = float(row.claimed_low), float(row.claimed_high)
    if row.metric == "price_performance_ratio":
        max_lo, max_hi = parity / lo, parity / hi
        achieved = None if subject_price is None else parity / subject_price
        holds = None if achieved is None else achieved >= lo
    else:
        max_lo, max_hi = parity * lo, parity * hi
        achieved = None if subject_price is None else subject_price / parity
        holds = None if achieved is None else achieved <= lo
    return ClaimCheck(**common, can_check=True, baseline_usd_per_hour=base_price.usd_per_hour,
                      baseline_price_date=base_price.date, parity_usd_per_hour=parity,
                      max_usd_per_hour_low=max_lo, max_usd_per_hour_high=max_hi,
                      subject_usd_per_hour=subject_price, achieved=achieved, holds=holds, missing=())


# --------------------------------------------------------------------------- launch and pre-flight


@functools.cache
def _launch_names() -> pd.DataFrame:
    return specs.read_data_csv("launch_env.csv").set_index("name")


def _plan(plan: object) -> RunPlan:
    return instance("plan", plan, RunPlan, "a RunPlan from planning.plan_run(...)")


def launch_environment(plan: RunPlan) -> pd.DataFrame:
    """The launch environment a plan implies, each name as the Neuron documentation names it.

    Returns
    -------
    pandas.DataFrame
        ``name, value, kind, sets, source, note``: ``NEURON_LOGICAL_NC_CONFIG`` and the matching
        ``--logical-nc-config`` in ``NEURON_CC_FLAGS`` (plus ``--auto-cast=matmult
        --auto-cast-type=fp8_e4m3`` for FP8 matmuls: the compiler casts only FP32 operations, so
        the note says the model must leave its matmuls in FP32 for them to act); ``NEURON_COMPILE_CACHE_URL`` (shared or
        per-instance, as the plan's cache); ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` (on when the
        recipe keeps its weights in 16 bits with no FP32 master copy); processes per instance (one per logical NeuronCore);
        ``NEURON_RT_NUM_CORES`` / ``NEURON_RT_VISIBLE_CORES`` (left to the framework);
        ``NEURON_RT_ROOT_COMM_ID`` for jobs of several instances; the flags of the plan's overlap
        schedule (``NEURON_FSDP=1``... from ``data/overlap_schedules.csv``).

    References
    ----------
    ``data/launch_env.csv``: AWS Neuron docs, "Logical NeuronCore configuration", "Neuron
    Persistent Cache", "Neuron Runtime configuration", "JAX NeuronX Environment Variables" (the
    stochastic-rounding variables; the XLA_USE_BF16 migration page they were cited from is archived),
    "NCCOM-TEST User Guide".

    Examples
    --------
    >>> p = plan_run("llama3-8b", 1e12, n_systems=1, usd_per_hour=40.0)
    >>> p.framework, p.inputs["recipe_name"]
    ('torchneuron', 'fp32-params-amp-adam')
    >>> env = launch_environment(p).set_index("name").value
    >>> env["NEURON_LOGICAL_NC_CONFIG"], env["NEURON_CC_FLAGS"], env["NEURON_RT_STOCHASTIC_ROUNDING_EN"]
    ('2', '--logical-nc-config=2', '0')
    >>> j = plan_run("llama3-8b", 1e12, n_systems=1, usd_per_hour=40.0, framework="jax")
    >>> env = launch_environment(j).set_index("name").value
    >>> env["NEURON_FSDP"], env["NEURON_FSDP_CC_MULTISTREAM"], env["NEURON_RT_STOCHASTIC_ROUNDING_EN"]
    ('1', '1', '0')
    """
    p = _plan(plan)
    names = _launch_names()
    chip = specs.chip(specs.system(p.system).chip_key)
    has_lnc = bool(cores.lnc_options(chip.key))
    r = sizing.recipe(p.inputs["recipe_name"])
    flags = [f"--logical-nc-config={p.lnc}"] if has_lnc else []
    fp8 = dtypes.rate_key(p.inputs["dtype"]) == "fp8"  # any spelling of an 8-bit float matmul
    if fp8:
        # the CLI reference: --auto-cast acts on FP32 operations only, so these flags give FP8
        # matmuls only where the graph's matmuls are still FP32 (no BF16 autocast in the model)
        flags += ["--auto-cast=matmult", "--auto-cast-type=fp8_e4m3"]
    facts = compilation.compiler_facts("neuron cache").set_index("fact").value
    shared = p.inputs["cache"] != "local"
    per_instance = cores.core_counts(p.system, p.lnc).logical_cores_per_instance
    rows = [
        ("NEURON_LOGICAL_NC_CONFIG", str(p.lnc) if has_lnc else "(not applicable: no LNC on this chip)"),
        ("NEURON_CC_FLAGS", " ".join(flags) if flags else "(none needed)"),
        # each framework's own compile cache (issue 39: NEURON_COMPILE_CACHE_URL is torch-neuronx's)
        {"torchneuron": ("TORCH_NEURONX_NEFF_CACHE_DIR", "<shared directory>/neff-cache" if shared
                         else "(unset: the system default, on each instance)"),
         "jax": ("jax compilation cache", "jax.config.update('jax_compilation_cache_dir', '<shared directory>')"
                 if shared else "(unset: JAX's default, on each instance)")}.get(
            p.framework, ("NEURON_COMPILE_CACHE_URL", "s3://<bucket>/neuron-compile-cache/" if shared
                          else f"{facts['default cache directory']} (default, on each instance)")),
        # rounding matters only where low-precision weights are updated with no FP32 copy
        ("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1" if (r.master == 0 and r.weights < 4) else "0"),
        ("NEURON_RT_STOCHASTIC_ROUNDING_SEED", "(unset: 0)" if (r.master == 0 and r.weights < 4)
         else "(not used: rounding is off)"),
    ]
    jax = p.framework == "jax"
    if jax:
        # JAX runs one worker process per instance that owns all its NeuronCores; across instances
        # the PJRT plugin needs every process's core count and this process's index (JAX NeuronX
        # Environment Variables); there is no torchrun
        rows += [("processes per instance", "1"),
                 ("NEURON_RT_NUM_CORES", "(unset: the process uses every NeuronCore of the instance)"),
                 ("NEURON_RT_VISIBLE_CORES", "(unset: the process sees every NeuronCore of the instance)")]
        if p.n_instances > 1:
            rows += [("NEURON_PJRT_PROCESSES_NUM_DEVICES",
                      ",".join([str(per_instance)] * min(p.n_instances, 3)) + (",…" if p.n_instances > 3 else "")
                      + f" ({p.n_instances} entries of {per_instance}: one per instance)"),
                     ("NEURON_PJRT_PROCESS_INDEX", f"<this instance's index, 0 to {p.n_instances - 1}>")]
    else:
        rows += [("processes per instance", str(per_instance)),
                 ("NEURON_RT_NUM_CORES", "(unset: one logical core per process, set by the framework)"),
                 ("NEURON_RT_VISIBLE_CORES", "(unset: set by the framework per process)")]
    if p.n_instances > 1:
        rows.append(("NEURON_RT_ROOT_COMM_ID", "<first host IP>:<free port>"))
    # the overlap schedule's flags (data/overlap_schedules.csv): what the plan's step time assumes
    rows += [tuple(f.split("=", 1)) for f in p.flags]
    out = []
    for name, value in rows:
        key = "NEURON_LOGICAL_NC_CONFIG" if name == "processes per instance" else name
        n = names.loc[key]
        note = n.note if name != "processes per instance" else ""
        if name == "NEURON_CC_FLAGS" and fp8:
            cast = names.loc["--auto-cast"]
            note = f"{note}; --auto-cast: {cast.note}" if note else f"--auto-cast: {cast.note}"
        procs = name == "processes per instance"
        out.append({"name": name, "value": value,
                    "kind": n.kind if not procs else ("launcher (python, one process on each instance)" if jax
                                                      else "launcher (torchrun --nproc_per_node)"),
                    "sets": n.sets if not procs else (
                        f"worker processes per instance: one JAX process owning its {per_instance} logical "
                        "NeuronCores" if jax else "worker processes per instance: one per logical NeuronCore"),
                    "source": n.source, "note": note})
    return pd.DataFrame(out)


def _nccom(ranks: int, nodes: int, size: float, op: str = "allr") -> str:
    hosts = "" if nodes == 1 else " --hosts <host 1> ... <host %d>" % nodes
    prefix = "" if nodes == 1 else "NEURON_RT_ROOT_COMM_ID=<host 1>:<port> "
    return f"{prefix}nccom-test -r {ranks}" + (f" -N {nodes}" if nodes > 1 else "") + \
        f" -b {int(size)} -e {int(size)} -d bf16 {op}{hosts}"


def preflight_checks(plan: RunPlan, *, benchmark_bytes: float = GiB) -> pd.DataFrame:
    """What to run before the real run, with the value each check should show.

    1. **Device listing** (``neuron-ls`` on every instance): the chips, NeuronCores and LNC.
    2. **A collective benchmark per level** the layout's groups cross (``nccom-test`` all-reduce of
       ``benchmark_bytes`` over one group's ranks and instances): the bus bandwidth chapter 03's
       one collective model expects of one such group alone
       (:func:`trainium_lab.collectives.neuron_collective`: hierarchical, with the calibrated bus
       efficiencies, launch and step latencies), beside its bound: a healthy measurement sits near
       the expectation, far below the bound.
    3. **A compile test on one instance** (the first 10-15 steps of the training script with the
       framework's compile cache on a shared directory: ``TORCH_NEURONX_NEFF_CACHE_DIR`` for
       TorchNeuron, JAX's persistent compilation cache; Neuron 2.32 ships no
       ``neuron_parallel_compile`` for them): the plan's graphs, each in about ``compile_s``.
    3b. **A profile of one step** (``neuron-explorer capture``, which replaces ``neuron-profile
       capture`` in 2.32): the exposed collectives the plan counts.
    4. **A short run**: tokens/s of the layout (then :func:`trainium_lab.sizing.mfu_from_throughput`).
    5. **A restore test**: write a checkpoint, replace an instance, reload: the write and reload
       times the plan assumes.

    Returns
    -------
    pandas.DataFrame
        ``step, tool, command, expect, value, unit``: ``value`` in base units (count, bytes/s, s,
        tokens/s); for bandwidths also what ``nccom-test`` prints (its "GB/s" is 2^30 bytes/s).

    References
    ----------
    AWS Neuron docs: "Neuron LS User Guide", "NCCOM-TEST User Guide", "Neuron Explorer environment
    variables" (``TORCH_NEURONX_NEFF_CACHE_DIR``), the 2.32 release notes (``neuron-explorer
    capture``); chapter 03 (:mod:`trainium_lab.collectives`).

    Examples
    --------
    >>> p = plan_run("llama3-405b", 15.6e12, system="trn2-ultraserver", n_systems=2, lnc=2,
    ...              usd_per_hour=40.0)
    >>> c = preflight_checks(p)
    >>> c.step.tolist()[:3]
    ['device listing', 'collective benchmark: tp (instance level)', 'collective benchmark: dp (efa level)']
    >>> round(float(c.value.iloc[1]) / 1e9)   # what NCCOM-TEST should print for a TP group, GB/s (calibrated)
    96
    """
    p = _plan(plan)
    size = positive("benchmark_bytes", benchmark_bytes)
    if size > 1e13:
        raise ValueError(f"benchmark_bytes must be at most 1e13, got {size:g}")
    lay = p.layout
    c = lay.cluster
    chip = specs.chip(c.chip)
    rows = [{"step": "device listing", "tool": "neuron-ls", "command": "neuron-ls",
             "expect": f"{c.chips_per_instance} devices of {chip.neuron_cores} NeuronCores; "
                       f"logical-neuroncore-config {c.lnc}; on each of {p.n_instances} instances",
             "value": float(c.chips_per_instance), "unit": "devices per instance"}]
    ordering = "tp-ep-pp-dp" if lay.ep > 1 else "tp-pp-dp"  # EP right after TP, as the planner places it
    placement = topology.place(lay.tp, lay.pp, lay.dp, lay.ep, system=c.system, n_systems=c.n_systems,
                               lnc=c.lnc, ordering=ordering)
    for kind in ("tp", "ep", "pp", "dp"):
        degree = getattr(lay, kind)
        if degree == 1:
            continue
        level, n_chips, _ = placement.slowest(kind)
        nodes = int(placement.groups(kind)["n_instances"].max())
        if level.bytes_per_s is None or n_chips == 1:
            rows.append({"step": f"collective benchmark: {kind} (chip level)", "tool": "nccom-test",
                         "command": _nccom(degree, 1, size), "expect": "inside one chip: no published figure",
                         "value": math.nan, "unit": "bytes/s"})
            continue
        n_sys = int(placement.groups(kind)["n_systems"].max())
        if kind != "ep":
            # a group spanning systems runs instance first: chapter 03's one collective model
            r = -(-degree // n_sys)
            # one group benchmarked alone (no other group sharing its chips), on the chips it occupies
            cost = collectives.neuron_collective("all_reduce", size, n_ranks=r * n_sys, system=c.system,
                                                 n_systems=n_sys, chips_per_system=-(-n_chips // n_sys),
                                                 lnc=c.lnc, launched_by="nccom-test")   # the tool's launch
            factor = collectives.bus_factor("all_reduce", degree)
            busbw, top = factor * size / cost.expected_s, factor * size / cost.bound_s
            if nodes == 1:
                # inside one instance the instance level's published figure binds (Trn2: 1,024 GB/s
                # over the torus); the chip's larger total also counts the links that leave the
                # instance (the UltraServer ring), which a group inside one instance does not use
                top = min(top, float(level.bytes_per_s))
            rows.append({"step": f"collective benchmark: {kind} ({level.name} level)", "tool": "nccom-test",
                         "command": _nccom(degree, nodes, size),
                         "expect": f"busbw ≈ {busbw / GB:,.1f} GB/s expected, "
                                   f"never above the bound {top / GB:,.1f} GB/s: chapter 03's {cost.algorithm} model, "
                                   "bus efficiencies and latencies calibrated on AWS's nccom-test runs; a measurement "
                                   "near the expectation is healthy; check the printed unit as size ÷ time, and look "
                                   "for a link or placement problem only far below the expectation",
                         "value": busbw, "unit": "bytes/s"})
            continue
        coll = "all_reduce" if kind != "ep" else ("all_to_all_direct" if level.switched else "all_to_all")
        t = collectives.collective_s(coll, size, n_chips, level.bytes_per_s, level.latency_s or 0.0)
        busbw = collectives.busbw_bytes_per_s(size, t, n_chips, "all_reduce" if kind != "ep" else "all_to_all")
        rows.append({"step": f"collective benchmark: {kind} ({level.name} level)", "tool": "nccom-test",
                     "command": _nccom(degree, nodes, size, "allr" if kind != "ep" else "alltoall"),
                     "expect": f"busbw up to ≈ {busbw / GB:,.1f} GB/s (printed as {busbw / GiB:,.1f} by nccom-test) "
                               f"over {n_chips} chips: chapter 03's bound from AWS's per-chip figure, whose "
                               "direction AWS does not state; plan with what you measure, and look for a link "
                               "or placement problem only far below it",
                     "value": busbw, "unit": "bytes/s"})
    per_instance = cores.core_counts(p.system, p.lnc).logical_cores_per_instance
    fw = p.framework
    cache = {"torchneuron": "TORCH_NEURONX_NEFF_CACHE_DIR=<shared dir> (TorchNeuron compiles only on Trn2/Trn3)",
             "jax": "JAX's persistent compilation cache (jax_compilation_cache_dir) on a shared directory",
             "nxd": "NEURON_COMPILE_CACHE_URL=<s3 or shared dir> (torch-neuronx, legacy)"}.get(
        fw, "the framework's compile cache on a shared directory")
    rows.append({"step": "compile test on one instance", "tool": "training script (first steps)",
                 "command": f"run the first 10-15 steps on one instance with {cache}  "
                            "# Neuron 2.32 ships no neuron_parallel_compile for TorchNeuron or JAX",
                 "expect": f"{p.inputs['n_graphs']} graphs in the cache, each in about "
                           f"{format_seconds(p.inputs['compile_s'])} (assumed: replace with the measurement)",
                 "value": p.inputs["compile_s"], "unit": "s per graph"})
    rows.append({"step": "profile one step", "tool": "neuron-explorer",
                 "command": "NEURON_FRAMEWORK_DEBUG=1 (keep the NEFF), then neuron-explorer capture on it  "
                            "# replaces neuron-profile capture in 2.32",
                 "expect": f"compute near {1 - p.estimate.time_s.get('tp_comm', 0.0) / p.step_s:.0%} of the step and "
                           "the exposed collectives the plan counts (TP, and FSDP reduce-scatters unless the "
                           f"schedule overlaps them: flags {p.flags_text})",
                 "value": p.step_s, "unit": "s per step"})
    rows.append({"step": "short run (throughput)", "tool": "training script",
                 "command": ("NEURON_PJRT_PROCESS_INDEX=<i> python train.py  # on every instance i, one JAX "
                             "process each; 50 steps on the full cluster" if fw == "jax" else
                             f"torchrun --nproc_per_node={per_instance} train.py  # 50 steps on the full cluster"),
                 "expect": f"{p.tokens_per_s:,.0f} tokens/s ({p.step_s:.2f} s per step); if lower, days and cost "
                           "scale up by the ratio",
                 "value": p.tokens_per_s, "unit": "tokens/s"})
    rows.append({"step": "restore test", "tool": "training script",
                 "command": "write a checkpoint, stop one instance, restart on a replacement, reload",
                 "expect": f"write ≈ {format_seconds(p.results['checkpoint_write_s'])}, reload ≈ "
                           f"{format_seconds(p.results['reload_s'])}, and the loss continues where it stopped",
                 "value": p.results["checkpoint_write_s"], "unit": "s"})
    return pd.DataFrame(rows)


def trainium_checklist(plan: RunPlan, *, gpu_cost_per_million_tokens_usd: float | None = None,
                       ops_compile: bool | None = None, max_compile_share: float = 0.01,
                       max_lost_fraction: float = 0.10) -> pd.DataFrame:
    """"When to choose Trainium", item by item, grounded in the earlier chapters.

    Items: **static shapes** (chapter 07: compiles take at most ``max_compile_share`` of the
    instance-hours); **operator coverage** (chapter 07: did every operator compile on a small
    instance? ``ops_compile``, None until tested); **scale-up domain** (chapters 03 and 05: the
    TP groups stay inside NeuronLink, not across EFA); **memory** (chapters 04 and 05: the layout
    keeps its margin); **goodput** (chapter 06: at most ``max_lost_fraction`` lost to failures);
    **cost** (this chapter: cheaper per token than the GPU alternative, when given).

    Returns
    -------
    pandas.DataFrame
        ``item, chapter, measured, threshold, passes`` (``passes`` None when it cannot be said).

    Examples
    --------
    >>> p = plan_run("llama3-8b", 1e12, n_systems=1, usd_per_hour=40.0)
    >>> trainium_checklist(p).passes.tolist()
    [True, None, True, True, True, None]
    """
    p = _plan(plan)
    if gpu_cost_per_million_tokens_usd is not None:
        gpu_cost_per_million_tokens_usd = positive("gpu_cost_per_million_tokens_usd",
                                                   gpu_cost_per_million_tokens_usd)
    if ops_compile is not None and ops_compile not in (True, False):
        raise ValueError(f"ops_compile must be True, False or None, got {ops_compile!r}")
    max_compile_share = in_range("max_compile_share", max_compile_share, 0.0, 1.0)
    max_lost_fraction = in_range("max_lost_fraction", max_lost_fraction, 0.0, 1.0)
    r = p.results
    compiling_s = (r["cold_start_s"] * p.n_instances + r["precompile_s"]
                   + r["expected_failures"] * r["restart_compile_s"] * p.n_instances)
    compile_share = compiling_s / (r["instance_hours"] * _SECONDS_PER_HOUR)
    level = p.estimate.levels["tp"]
    rows = [
        ("static shapes: compiles are a small share of the cost", "07", compile_share, max_compile_share,
         compile_share <= max_compile_share),
        ("operator coverage: every operator compiles on a small instance", "07",
         math.nan if ops_compile is None else float(ops_compile), 1.0, ops_compile),
        ("scale-up domain: TP groups stay inside NeuronLink", "03, 05", float(level != "efa"), 1.0,
         level != "efa"),
        ("memory: the layout keeps its HBM margin", "04, 05", p.estimate.headroom_bytes / p.estimate.hbm_bytes,
         p.inputs["min_headroom_fraction"], bool(p.estimate.fits)),
        ("goodput: little time lost to failures and checkpoints", "06", r["lost_fraction"], max_lost_fraction,
         r["lost_fraction"] <= max_lost_fraction),
        ("cost: cheaper per trained token than the GPU alternative", "11", r["cost_per_million_tokens_usd"],
         math.nan if gpu_cost_per_million_tokens_usd is None else gpu_cost_per_million_tokens_usd,
         None if gpu_cost_per_million_tokens_usd is None
         else r["cost_per_million_tokens_usd"] < gpu_cost_per_million_tokens_usd),
    ]
    return pd.DataFrame(rows, columns=["item", "chapter", "measured", "threshold", "passes"])


#: Chapter 11's Llama 3 405B deadline plan (1T tokens in 60 days on Trn2 UltraServers, checkpoints
#: written at 10 GB/s for the whole job): the one set of arguments the chapter, the cheat sheet
#: (``tools/cheatsheet.py``) and the capstone diagram (``diagrams.capstone_days``) share, so that
#: none of them can quote the plan at other settings. The price is the trn2.48xlarge parity
#: placeholder (:func:`parity_usd_per_hour`), passed by the caller.
CAPSTONE_405B_RUN: Mapping[str, object] = MappingProxyType({
    "model": "llama3-405b", "n_tokens": 1e12, "system": "trn2-ultraserver", "deadline_s": 60 * day,
    "lnc": 2, "global_batch": 2048, "purchase_option": "capacity-block",
    "checkpoint_write_bytes_per_s": 10 * GB})


def capstone_405b_plan(**overrides) -> "RunPlan":
    """Chapter 11's 405B deadline plan (``CAPSTONE_405B_RUN`` at the parity price), with
    ``overrides`` passed on to :func:`plan_run` (``n_systems=38`` for a neighbour count).

    Examples
    --------
    >>> p = capstone_405b_plan()
    >>> p.inputs["checkpoint_write_bytes_per_s"] == 10 * GB
    True
    """
    kwargs = {"usd_per_hour": parity_usd_per_hour("trn2.48xlarge"), **CAPSTONE_405B_RUN, **overrides}
    if "n_systems" in overrides and "deadline_s" not in overrides:   # a count, unless a verdict is asked for
        kwargs.pop("deadline_s", None)
    return plan_run(kwargs.pop("model"), kwargs.pop("n_tokens"), **kwargs)
