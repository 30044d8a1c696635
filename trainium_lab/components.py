"""What ships in the Neuron SDK, as data: each framework, library, tool, compiler and runtime a
chapter names, with its status, the release that set it, the chips it runs on and its source.

``data/components.csv`` is the one table of what is GA, beta, closed beta, in maintenance, at end of
support or removed (read against the Neuron 2.32 documentation). Chapters, the planner
(:mod:`trainium_lab.frameworks` reads each framework's status from here) and the CLI ask this
module; none of them types a status.

* :func:`component`, :func:`components` -- the records (:class:`Component`);
* :func:`components_table` -- one row per component;
* :func:`is_current`, :func:`status_label` -- whether a component ships today, and its status in words;
* :data:`ALIASES`, :func:`mentions` -- the names a chapter may use for each component.

References
----------
AWS Neuron docs (snapshot aws-neuron/aws-neuron-sdk@81ce03a, 2026-08-21): What's New (2.32.0);
the announcements of NxD Inference/NxD Core maintenance (2.30), NxD Training end of support
(2.28 the last release), Neuron Explorer replacing Neuron Profiler (2.30) and Transformers NeuronX
end of support (2.26); the PyTorch, JAX, NKI, NKI Library, vLLM Neuron and tools pages cited per
row in ``data/sources.csv``.

Examples
--------
>>> status_label("nxd-inference")
'maintenance since 2.30'
>>> status_label("torchneuron"), is_current("torchneuron")
('closed beta since 2.29', True)
>>> component("neuron-profile").replaced_by
'neuron-explorer'
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from trainium_lab import specs
from trainium_lab._validate import choice

__all__ = ["Component", "STATUSES", "CURRENT_STATUSES", "KINDS", "CHIPS", "ALIASES", "component",
           "components", "components_table", "component_keys", "is_current", "status_label", "mentions"]

#: every status the table may hold, from shipping to gone
STATUSES: tuple[str, ...] = ("ga", "beta", "closed-beta", "maintenance", "end-of-support", "removed")
#: statuses of a component that ships in the current release
CURRENT_STATUSES: tuple[str, ...] = ("ga", "beta", "closed-beta")
KINDS: tuple[str, ...] = ("framework", "library", "tool", "compiler", "runtime")
CHIPS: tuple[str, ...] = ("trn1", "inf2", "trn2", "trn3")

#: the names (regular expressions, matched case-insensitively on word boundaries) by which prose
#: names each component; one home for them (the prose test and the chapters' checks use it)
ALIASES: dict[str, tuple[str, ...]] = {
    "torchneuron": (r"TorchNeuron", r"native PyTorch(?: on Neuron| for AWS Trainium| backend)?"),
    "torch-neuronx": (r"torch[-_]neuronx", r"PyTorch[/ ]XLA", r"PyTorch NeuronX", r"torch_xla"),
    "jax-neuronx": (r"jax[-_]neuronx", r"JAX NeuronX", r"JAX on Neuron", r"JAX Neuron",
                    r"libneuronxla"),   # its PJRT plugin
    "nxd-core": (r"NxD Core", r"neuronx[-_]distributed(?![-_ ]inference|[-_ ]training)"),
    "nxd-training": (r"NxD Training", r"NxDT", r"NeuronX Distributed Training",
                     r"NxD(?! (?:Inference|Core|Training))"),   # the course's "NxD": the legacy training stack
    "nxd-inference": (r"NxD Inference", r"NxDI", r"neuronx[-_]distributed[-_ ]inference",
                      r"NeuronX Distributed Inference"),
    "transformers-neuronx": (r"transformers[-_ ]neuronx",),
    "vllm-neuron": (r"vLLM Neuron", r"vllm[-_]neuron", r"vLLM's Neuron plugin"),
    "nki": (r"NKI(?! Library)", r"Neuron Kernel Interface"),
    "nki-library": (r"NKI Library", r"nkilib", r"nki[-_]library"),
    "neuron-explorer": (r"Neuron Explorer", r"neuron-explorer"),
    "neuron-profile": (r"neuron-profile", r"Neuron Profiler"),
    "neuron-parallel-compile": (r"neuron[-_]parallel[-_]compile",),
    "nccom-test": (r"nccom[-_]test",),
    "neuronx-cc": (r"neuronx[-_]cc", r"Neuron (?:Graph )?Compiler"),
    "neuron-runtime": (r"Neuron Runtime", r"libnrt"),
    "neuron-ls": (r"neuron-ls",),
    "neuron-top": (r"neuron-top",),
    "neuron-monitor": (r"neuron-monitor",),
}


@dataclass(frozen=True)
class Component:
    """One row of ``data/components.csv``.

    Attributes
    ----------
    component : str
        The key (``"nxd-inference"``).
    name, kind, status, status_release : str
        ``kind`` of :data:`KINDS`; ``status`` of :data:`STATUSES`; ``status_release`` the Neuron
        release that set the status (for end of support: the last release that includes it), or ``""``.
    chips : tuple of str
        Of :data:`CHIPS`, as the cited page names them.
    replaced_by, source_id, note : str
        The component that replaces it (or ``""``), its source in ``data/sources.csv``, a note.
    """

    component: str
    name: str
    kind: str
    status: str
    status_release: str
    chips: tuple[str, ...]
    replaced_by: str
    source_id: str
    note: str

    @property
    def current(self) -> bool:
        """Whether it ships in the current release (status in :data:`CURRENT_STATUSES`)."""
        return self.status in CURRENT_STATUSES

    @property
    def label(self) -> str:
        """The status in words (:func:`status_label`)."""
        words = {"ga": "GA", "closed-beta": "closed beta", "end-of-support": "end of support"}
        word = words.get(self.status, self.status)
        if not self.status_release:
            return word
        if self.status == "end-of-support":
            return f"{word} after {self.status_release}"
        if self.status == "removed":
            return f"{word} in {self.status_release}"
        return f"{word} since {self.status_release}"

    def __repr__(self) -> str:
        return f"Component({self.component!r}: {self.label}; {'/'.join(self.chips)})"

    def _repr_markdown_(self) -> str:
        repl = f"; replaced by {component(self.replaced_by).name}" if self.replaced_by else ""
        return f"**{self.name}** ({self.kind}): {self.label}; runs on {', '.join(self.chips)}{repl}"


def _list(text: str) -> tuple[str, ...]:
    return tuple(x for x in str(text).split(";") if x)


@functools.cache
def _records() -> dict[str, Component]:
    df = specs.read_data_csv("components.csv")
    out: dict[str, Component] = {}
    for row in df.itertuples(index=False):
        c = Component(component=row.component, name=row.name, kind=row.kind, status=row.status,
                      status_release=str(row.status_release), chips=_list(row.chips),
                      replaced_by=row.replaced_by, source_id=row.source_id, note=row.note)
        bad = ((c.kind not in KINDS) or (c.status not in STATUSES) or set(c.chips) - set(CHIPS)
               or c.component in out or c.component not in ALIASES)
        if bad:
            raise ValueError(f"components.csv: bad row for {c.component!r} (kind, status, chips, a repeated key, "
                             "or no entry in components.ALIASES)")
        out[c.component] = c
    for c in out.values():
        if c.replaced_by and c.replaced_by not in out:
            raise ValueError(f"components.csv: {c.component} replaced_by {c.replaced_by!r} is not a component")
    return out


def component_keys() -> tuple[str, ...]:
    """Every key of ``data/components.csv``, in table order."""
    return tuple(_records())


def component(key: str | Component) -> Component:
    """The record of one component, by key (``"vllm-neuron"``).

    Examples
    --------
    >>> component("nxd-training").status, component("nxd-training").status_release
    ('end-of-support', '2.28')
    """
    if isinstance(key, Component):
        return key
    return _records()[choice("key", key, component_keys())]


def components() -> tuple[Component, ...]:
    """Every component, in table order."""
    return tuple(_records().values())


def components_table():
    """One row per component: ``component, name, kind, status, status_release, label, current,
    chips, replaced_by, source_id, note``.

    Examples
    --------
    >>> t = components_table().set_index("component")
    >>> t.loc["vllm-neuron", ["label", "chips"]].tolist()
    ['beta', 'trn2, trn3']
    """
    import pandas as pd

    return pd.DataFrame([{"component": c.component, "name": c.name, "kind": c.kind, "status": c.status,
                          "status_release": c.status_release, "label": c.label, "current": c.current,
                          "chips": ", ".join(c.chips), "replaced_by": c.replaced_by,
                          "source_id": c.source_id, "note": c.note} for c in components()])


def is_current(key: str | Component) -> bool:
    """Whether ``key`` ships in the current release (GA, beta or closed beta).

    Examples
    --------
    >>> is_current("vllm-neuron"), is_current("nxd-inference"), is_current("neuron-parallel-compile")
    (True, False, False)
    """
    return component(key).current


def status_label(key: str | Component) -> str:
    """The status in words: ``"closed beta since 2.29"``, ``"maintenance since 2.30"``,
    ``"end of support after 2.28"``, ``"removed in 2.32"``, ``"GA since 2.29"`` or just ``"beta"``.

    Examples
    --------
    >>> status_label("nxd-training"), status_label("neuron-parallel-compile")
    ('end of support after 2.28', 'removed in 2.32')
    """
    return component(key).label


@functools.cache
def _alias_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((k, re.compile(r"(?<![\w-])(?:" + "|".join(v) + r")(?![\w-])", re.IGNORECASE))
                 for k, v in ALIASES.items())


def mentions(text: str) -> tuple[str, ...]:
    """The components ``text`` names (keys, in table order), by :data:`ALIASES`.

    Examples
    --------
    >>> mentions("Serve with vLLM Neuron; NxD Inference is in maintenance.")
    ('nxd-inference', 'vllm-neuron')
    >>> mentions("The NKI Library has an RMSNorm kernel.")
    ('nki-library',)
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    return tuple(k for k, pat in _alias_patterns() if pat.search(text))
