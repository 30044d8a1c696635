"""Checking published claims about Trainium against ``data/``.

A published figure or phrase is tested against the sourced facts and gets a verdict with its
evidence, computed from the data rather than typed: *supported*, *contradicted*, a *unit
mix-up* (decimal and binary prefixes confused), *disputed* (matches a value another AWS page
gives) or, for claims only a cited source can settle, *unverified*. The claims themselves are
``data/claims.csv``. The one home of these names (chapter 01 calls them as ``claim_checks.X``).

References
----------
AWS Neuron docs, "Trainium2 Architecture", "Trainium3 Architecture", "Amazon EC2 Trn2
Architecture", "Logical NeuronCore configuration" (``data/sources.csv``); IEC 80000-13
(binary prefixes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainium_lab import specs
from trainium_lab.cores import core_counts
from trainium_lab import units as u
from trainium_lab._validate import choice, in_range

__all__ = ["ClaimCheck", "Claim", "check_figure", "check_text", "claims", "claim", "check_claim",
           "claims_table", "VERDICTS"]


#: units a claimed figure may be written in, to base units
_CLAIM_UNITS: dict[str, float] = {
    **{k: v for k, v in specs.UNIT_FACTORS.items() if k not in ("count", "USD/hour")},
    "count": 1.0, "KB": u.KB, "MB": u.MB, "TB": u.TB, "PB": u.PB, "TiB": u.TiB,
    "EFLOPS": 1e18, "MB/s": u.MB,
}
_FAMILY = {**{k: "bytes" for k in ("KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "PB")},
           **{k: "flop rate" for k in ("TFLOPS", "PFLOPS", "EFLOPS")},
           **{k: "bandwidth" for k in ("TB/s", "GB/s", "GiB/s", "Gbps", "MB/s")},
           "count": "count", "GHz": "frequency", "us": "time"}
#: the same prefix read the other way (decimal <-> binary)
#: a decimal label on a binary figure written in thousands ("6.1 TB" for 6,144 GiB)
_THOUSAND_READING = {"TB": "GiB", "GB": "MiB", "PB": "TiB"}
_OTHER_READING = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB",
                  "KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB", "GB/s": "GiB/s",
                  "GiB/s": "GB/s"}


@dataclass(frozen=True)
class ClaimCheck:
    """The outcome of testing one claim against ``data/``.

    ``verdict`` is ``"supported"``, ``"contradicted"``, ``"unit mix-up"`` (right only if
    a decimal prefix is read as binary or the reverse, or a binary figure is written in
    thousands under a decimal label), ``"disputed"`` (matches a value that another AWS or
    vendor page gives, not the one the course uses) or, for claims settled by a cited
    source rather than ``data/``, ``"unverified"`` (no source read supports or refutes it).
    """

    claim: str
    verdict: str
    data_value: str
    evidence: str
    source: str


def _fmt(value: str, unit: str) -> str:
    return f"{value} {unit}" if unit not in ("text", "list") else value


def _close(a: float, b: float, rel_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol)


def check_figure(entity: str, field: str, claimed: float, unit: str, *,
                 claim: str | None = None, rel_tol: float = 0.02) -> ClaimCheck:
    """Test a claimed number against the ``used`` fact for ``entity``/``field``.

    The claim is *supported* if it is within ``rel_tol`` of the used value; *disputed*
    if it matches an ``alternative`` row instead; a *unit mix-up* if it matches only
    when its decimal prefix is read as binary (MB as MiB) or the reverse; otherwise
    *contradicted*, and the evidence names any other fact in ``data/`` with the claimed
    value (the same chip's FP8 rate, the previous generation's SRAM...).

    Parameters
    ----------
    entity, field : str
        As in ``data/*.csv`` (``"trn2"``, ``"dense_flops_per_s.bf16"``).
    claimed : float
        The number as the claim writes it (> 0).
    unit : str
        Its unit: ``"TFLOPS"``, ``"PFLOPS"``, ``"MB"``, ``"MiB"``, ``"GiB"``, ``"TB"``,
        ``"TB/s"``, ``"GB/s"``, ``"Gbps"``, ``"count"``...
    claim : str, optional
        The claim's wording, kept in the result.
    rel_tol : float
        Relative tolerance, in (0, 0.5]; the default 2 % allows for rounding.

    Returns
    -------
    ClaimCheck

    Examples
    --------
    >>> r = check_figure("trn2", "dense_flops_per_s.bf16", 1300, "TFLOPS")
    >>> r.verdict
    'contradicted'
    >>> "trn2 dense_flops_per_s.fp8" in r.evidence
    True
    >>> check_figure("trn2", "hbm_bytes", 96, "GiB").verdict
    'supported'
    """
    used = specs.fact(entity, field)
    if used.unit in ("text", "list"):
        raise ValueError(f"field {field!r} of {entity!r} is text; use check_text")
    unit = choice("unit", unit, tuple(_CLAIM_UNITS))
    rel_tol = in_range("rel_tol", rel_tol, 0.0, 0.5, low_open=True)
    claimed_value = in_range("claimed", claimed, 0.0, math.inf, low_open=True, high_open=True)
    family = _FAMILY.get(unit)
    if family != _FAMILY.get(used.unit):
        raise ValueError(f"unit {unit!r} does not measure the same thing as {used.unit!r} "
                         f"({entity} {field})")
    claim = claim or f"{claimed:,g} {unit} for {entity} {field}"
    base = claimed_value * _CLAIM_UNITS[unit]
    target = float(used.base_value)  # type: ignore[arg-type]
    shown = _fmt(used.value, used.unit)
    src = used.source_title
    if _close(base, target, rel_tol):
        return ClaimCheck(claim, "supported", shown, f"data/ has {shown} ({src}).", src)
    for alt in specs.alternatives(entity, field):
        if _close(base, float(alt.base_value), rel_tol):  # type: ignore[arg-type]
            return ClaimCheck(claim, "disputed", shown,
                              f"data/ uses {shown} ({src}); {_fmt(alt.value, alt.unit)} is what "
                              f"{alt.source_title} gives ({alt.note}).", src)
    other = _OTHER_READING.get(unit)
    # Readings that make a mislabelled figure match: the prefix read the other way (TB as TiB),
    # or a binary figure written in thousands under a decimal label (6,144 GiB as "6.1 TB").
    readings_mixup = []
    if other is not None:
        readings_mixup.append((abs(claimed_value * _CLAIM_UNITS[other] / target - 1),
                               f"{unit} is read as {other}: the claim mixes decimal and binary prefixes"))
    thousand = _THOUSAND_READING.get(unit)
    if thousand is not None:
        value_1000 = claimed_value * 1000 * _CLAIM_UNITS[thousand]
        readings_mixup.append((abs(value_1000 / target - 1),
                               f"it is read as {claimed * 1000:,g} {thousand} ({claimed:g} thousand "
                               f"{thousand}): the claim writes a {thousand} figure in thousands and "
                               f"labels it {unit}"))
    fits = sorted(r for r in readings_mixup if r[0] <= rel_tol)
    if fits:
        def num(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 else f"{x:#.3g}"

        in_unit = f" = {num(target / _CLAIM_UNITS[unit])} {unit}"
        as_other = f" = {num(target / _CLAIM_UNITS[other])} {other}" if other and other != used.unit else ""
        return ClaimCheck(claim, "unit mix-up", shown,
                          f"data/ has {shown}{in_unit}{as_other} ({src}). "
                          f"{claimed:,g} {unit} matches it only if {fits[0][1]}.", src)
    readings = [(unit, base)] + ([(other, claimed_value * _CLAIM_UNITS[other])] if other else [])
    matches = []
    for f in specs.all_facts():
        if f.status != "used" or _FAMILY.get(f.unit) != family or (f.entity, f.field) == (entity, field):
            continue
        value = f.base_value
        if not isinstance(value, float):
            continue
        for name, b in readings:
            if _close(b, value, rel_tol):
                reading = "" if name == unit else f" (reading {unit} as {name})"
                same = 0 if f.entity == entity else (1 if f.field == field else 2)
                matches.append((same, f"{f.entity} {f.field} = {_fmt(f.value, f.unit)}{reading}"))
                break
    evidence = f"data/ has {shown} ({src})."
    if matches:
        evidence += " The claimed figure matches " + "; ".join(m for _, m in sorted(matches)[:3]) + "."
    return ClaimCheck(claim, "contradicted", shown, evidence, src)


def check_text(entity: str, field: str, phrase: str, *, claim: str | None = None) -> ClaimCheck:
    """Test whether a text fact (topology, core version...) says ``phrase``.

    Supported if the used value or its note contains ``phrase`` (case-insensitive) and
    does not negate it ("not all-to-all"); the evidence lists the entities whose value
    does say it.

    Examples
    --------
    >>> r = check_text("trn2-ultraserver", "topology", "all-to-all")
    >>> r.verdict, "trn3-gen1-ultraserver" in r.evidence
    ('contradicted', True)
    >>> check_text("trn2", "core_version", "NeuronCore-v3").verdict
    'supported'
    """
    used = specs.fact(entity, field)
    if not isinstance(phrase, str) or not phrase.strip():
        raise ValueError(f"phrase must be non-empty text, got {phrase!r}")
    p = phrase.strip().lower()

    def says(f: specs.Fact) -> bool:
        text = f.value.lower()
        return p in text and f"not {p}" not in text and f"not {p}" not in f.note.lower()

    claim = claim or f"{entity} {field}: {phrase}"
    shown = _fmt(used.value, used.unit)
    evidence = f"data/ has “{shown}”" + (f" ({used.note})" if used.note else "") + f", from {used.source_title}."
    if says(used):
        return ClaimCheck(claim, "supported", shown, evidence, used.source_title)
    holders = sorted({f.entity for f in specs.all_facts()
                      if f.field == field and f.status == "used" and says(f)})
    if holders:
        evidence += f" It holds for: {', '.join(holders)}."
    return ClaimCheck(claim, "contradicted", shown, evidence, used.source_title)


def _lnc_claim(claimed: float, claim: str, system: str) -> ClaimCheck:
    cc = core_counts(system)
    verdict = "supported" if cc.logical_cores == claimed else "contradicted"
    lnc = specs.fact(specs.system(system).chip_key, "lnc_default")
    return ClaimCheck(claim, verdict, f"{cc.logical_cores} logical cores",
                      f"{cc.n_chips} chips × {cc.physical_cores // cc.n_chips} physical cores "
                      f"/ LNC {cc.lnc} = {cc.logical_cores} ({lnc.source_title}).", lnc.source_title)


@dataclass(frozen=True)
class Claim:
    """One published claim from ``data/claims.csv`` and the fact it is about.

    ``check`` says how it is tested: ``"figure"`` and ``"text"`` against ``data/``,
    ``"lnc"`` by counting logical cores, ``"source"`` by a cited source that settles it
    (``evidence``, ``evidence_source``) when no fact in ``data/`` can. ``verdict`` is the
    verdict recorded with the claim; for the computed checks a test keeps it equal to
    what :meth:`run` finds.
    """

    claim_id: str
    claim: str
    said_by: str
    entity: str
    field: str
    check: str
    claimed_value: float | None
    claimed_unit: str
    phrase: str
    said_by_id: str = ""
    verdict: str = ""
    evidence: str = ""
    evidence_source: str = ""

    def run(self) -> ClaimCheck:
        """Test the claim against ``data/`` (or report the cited source's verdict)."""
        if self.check == "figure":
            return check_figure(self.entity, self.field, self.claimed_value, self.claimed_unit,
                                claim=self.claim)
        if self.check == "text":
            return check_text(self.entity, self.field, self.phrase, claim=self.claim)
        if self.check == "source":
            return ClaimCheck(self.claim, self.verdict, "", self.evidence, self.evidence_source)
        return _lnc_claim(self.claimed_value, self.claim, self.entity)


@functools.cache
def _claims() -> dict[str, Claim]:
    df = specs.read_data_csv("claims.csv")  # adds "source": the title of source_id (= said_by)
    titles = {key: row["title"] for key, row in specs._sources().items()}
    out = {}
    for r in df.itertuples(index=False):
        evidence_source = "; ".join(titles[i] for i in r.evidence_source_id.split(";") if i)
        out[r.claim] = Claim(r.claim_id, r.claim, titles[r.said_by], r.entity, r.field, r.check,
                             float(r.claimed_value) if r.claimed_value != "" else None,
                             r.claimed_unit, r.phrase, r.said_by, r.verdict, r.evidence,
                             evidence_source)
    return out


def claims() -> tuple[Claim, ...]:
    """Every published claim in ``data/claims.csv``, in file order."""
    return tuple(_claims().values())


def claim(claim_id: str) -> Claim:
    """One claim by its ``claim_id`` (e.g. ``"trn2-sram-24mb"``).

    >>> claim("trn2-sram-24mb").claimed_unit
    'MB'
    """
    by_id = {c.claim_id: c for c in claims()}
    return by_id[choice("claim_id", claim_id, tuple(by_id))]


def check_claim(claim: str) -> ClaimCheck:
    """Check one of the claims in ``data/claims.csv`` by its wording.

    >>> check_claim("24 MB SRAM per core (Trainium2)").verdict
    'contradicted'
    """
    key = choice("claim", claim, tuple(_claims()))
    return _claims()[key].run()


#: the verdicts a claim can get (see :class:`ClaimCheck`)
VERDICTS = ("supported", "contradicted", "unit mix-up", "disputed", "unverified")


def claims_table(query: str = "", *, verdict: str | None = None,
                 said_by: str | None = None) -> pd.DataFrame:
    """Every claim in ``data/claims.csv`` with who made it, its verdict and the evidence.

    Parameters
    ----------
    query : str
        Case-insensitive words; a row is kept if every word appears in its claim,
        evidence or source.
    verdict : str, optional
        Keep one verdict (one of :data:`VERDICTS`).
    said_by : str, optional
        Keep the claims of one source: its ``source_id`` (``"seed-001"``) or title.

    Returns
    -------
    pandas.DataFrame
        ``claim_id, claim, said_by, verdict, data_value, evidence, source`` (``said_by`` is
        the title of the document that makes the claim, ``source`` the one that settles it).

    Examples
    --------
    >>> t = claims_table()
    >>> int(t.verdict.value_counts()["supported"]) >= 3, len(t) >= 40
    (True, True)
    >>> claims_table("rainier", verdict="contradicted").claim_id.tolist()
    ['rainier-65ef']
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be text, got {type(query).__name__}")
    if verdict is not None:
        verdict = choice("verdict", verdict, VERDICTS)
    every = claims()
    if said_by is not None:
        if not isinstance(said_by, str):
            raise ValueError(f"said_by must be a source id or title, got {said_by!r}")
        known = {c.said_by_id: c.said_by for c in every}
        if said_by not in known and said_by not in known.values():
            listed = ", ".join(repr(k) for k in known)
            raise ValueError(f"said_by must be one of {listed} (or their titles); got {said_by!r}")
    rows = []
    for c in every:
        result = c.run()
        rows.append({"claim_id": c.claim_id, **vars(result), "said_by": c.said_by,
                     "said_by_id": c.said_by_id})
    df = pd.DataFrame(rows, columns=["claim_id", "claim", "said_by", "verdict", "data_value", "evidence",
                                     "source", "said_by_id"])
    keep = np.ones(len(df), dtype=bool)
    if verdict is not None:
        keep &= (df.verdict == verdict).to_numpy()
    if said_by is not None:
        keep &= ((df.said_by_id == said_by) | (df.said_by == said_by)).to_numpy()
    words = query.lower().split()
    if words:
        text = (df.claim + " " + df.evidence + " " + df.source + " " + df.said_by).str.lower()
        keep &= np.array([all(w in t for w in words) for t in text], dtype=bool)
    return df[keep].drop(columns="said_by_id").reset_index(drop=True)
