"""Real compilation on the learner's CPU: JAX's ``jax.jit`` shows what neuronx-cc lives with.

JAX traces a Python function into a StableHLO program (on Trainium the Neuron
PJRT plugin hands it to the Neuron compiler as an XLA HLO module, the input the
neuronx-cc CLI reference names), compiles it once per input shape with XLA, and keeps the
executable in an in-memory cache keyed by shapes and static arguments; a
persistent cache on disk survives the process. Every function here runs a small
program and returns **counts and program text**, which are the same on every
machine; compile times are returned too, but they vary and belong only in cells
whose output is not compared.

Compiles are counted from JAX's own log (``jax.log_compiles``: one "Compiling ..."
record per compiled program) and from ``jax.monitoring`` events for the
persistent cache (hits and misses); :func:`watch_compiles` collects both without
printing anything. Each demonstration defines its functions afresh, so its counts
do not depend on what ran before.

JAX is imported only when a function runs (on the CPU: ``JAX_PLATFORMS=cpu`` is set
unless already set), so importing this module is cheap.

References
----------
JAX documentation: "Just-in-time compilation" (tracing, static arguments, caching),
https://docs.jax.dev/en/latest/jit-compilation.html; "Control flow and logical
operators with JIT" (``lax.select``, ``lax.scan``, ``fori_loop``, tracer boolean conversion),
https://docs.jax.dev/en/latest/control-flow.html; "Persistent compilation cache",
https://docs.jax.dev/en/latest/persistent_compilation_cache.html; the cache key's
parts in ``jax/_src/cache_key.py`` (jax 0.10.2). AWS, "JAX NeuronX Known Issues":
``jax.lax.cond`` is not supported on Neuron and only static while loops are; the
demonstrations therefore use ``jnp.where`` / ``lax.select`` and static loop bounds.

Examples
--------
>>> df = shape_compiles(batches=(8, 16), repeat=8)
>>> df.new_compiles.tolist()
[1, 1, 0]
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from trainium_lab._validate import choice, integer, sequence

__all__ = ["CompileLog", "watch_compiles", "step_hlo", "call_times", "hlo_op_count", "shape_compiles",
           "BranchDemo", "branch_compiles", "loop_vs_scan", "static_loop_compiles", "MaskDemo",
           "masked_shape_compiles", "ragged_batch_compiles", "graph_cut_compiles",
           "persistent_cache_demo", "xla_dump_files"]

_COMPILING = re.compile(r"^Compiling (?P<name>\S+) with global shapes and types \((?P<shapes>.*?)\)\.")
_FINISHED = re.compile(r"^Finished XLA compilation of (?P<name>\S+) in (?P<s>[0-9.eE+-]+) sec")


def _jax():
    """Import JAX on the CPU (quietly); the one place this module imports it."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    return jax


@dataclass
class CompileLog:
    """What :func:`watch_compiles` saw: programs compiled, persistent-cache events, times.

    ``compiled``: one ``(program name, argument shapes)`` per compiled program, in
    order (a persistent-cache hit is listed too: JAX logs it before looking in the
    cache). ``cache_hits`` / ``cache_misses``: persistent-cache lookups.
    ``compile_s``: seconds per XLA compilation (machine-dependent).
    """

    compiled: list = field(default_factory=list)
    cache_hits: int = 0
    cache_misses: int = 0
    compile_s: list = field(default_factory=list)

    def count(self, name: str | None = None) -> int:
        """Programs compiled (whose name contains ``name``, if given)."""
        return sum(1 for n, _ in self.compiled if name is None or name in n)


class _Collector(logging.Handler):
    def __init__(self, log: CompileLog):
        super().__init__(level=logging.DEBUG)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        m = _COMPILING.match(msg)
        if m:
            self.log.compiled.append((m["name"], m["shapes"].rstrip(",")))
            return
        m = _FINISHED.match(msg)
        if m:
            self.log.compile_s.append(float(m["s"]))


@contextlib.contextmanager
def watch_compiles():
    """Collect JAX's compile log and persistent-cache events inside a ``with`` block.

    Turns on ``jax.log_compiles`` and routes JAX's log records to the returned
    :class:`CompileLog` instead of the terminal (nothing is printed), and listens
    to the ``jax.monitoring`` events ``/jax/compilation_cache/cache_hits`` and
    ``cache_misses``. Everything is restored on exit.

    Examples
    --------
    >>> import numpy as np
    >>> jax = _jax()
    >>> with watch_compiles() as log:
    ...     _ = jax.jit(lambda x: x * 2)(np.ones(3, np.float32))
    >>> log.count()
    1
    """
    jax = _jax()
    log = CompileLog()
    handler = _Collector(log)
    logger = logging.getLogger("jax")
    old_level, old_propagate = logger.level, logger.propagate

    def on_event(event: str, **_kwargs) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            log.cache_hits += 1
        elif event == "/jax/compilation_cache/cache_misses":
            log.cache_misses += 1

    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG if old_level == logging.NOTSET else min(old_level, logging.WARNING))
    jax.monitoring.register_event_listener(on_event)
    try:
        with jax.log_compiles(True):
            yield log
    finally:
        jax.monitoring.unregister_event_listener(on_event)
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def _check_dims(batch: int, d_model: int) -> tuple[int, int]:
    return (integer("batch", batch, minimum=1, maximum=4096),
            integer("d_model", d_model, minimum=1, maximum=1024))


def _make_step():
    """A fresh ``train_step`` (new function object, so JAX's caches start empty for it)."""
    jnp = _jax().numpy

    def train_step(x, w):
        h = jnp.tanh(x @ w)
        return jnp.mean(h * h)

    return train_step


def step_hlo(batch: int = 8, d_model: int = 16, dialect: str = "stablehlo") -> str:
    """The program JAX produces for a tiny training-step stand-in, before any optimisation.

    ``train_step(x, w) = mean(tanh(x @ w)²)`` with ``x`` of shape ``(batch,
    d_model)`` and ``w`` of shape ``(d_model, d_model)``, lowered from abstract
    shapes (``jax.ShapeDtypeStruct``): tracing only, nothing runs or compiles.

    ``dialect="stablehlo"`` gives ``lower().as_text()``: the StableHLO module JAX
    emits, before any compiler pass. ``dialect="hlo"`` gives
    ``lower().compiler_ir("hlo")``: the same program as an XLA HLO module, the form
    the Neuron PJRT plugin hands to ``neuronx-cc`` (``--framework XLA`` takes an HLO
    module). Neither is optimised; XLA's own passes, and then ``neuronx-cc``'s, come
    after. The shapes are written into every line: another batch size is another program.

    Examples
    --------
    >>> "tensor<8x16xf32>" in step_hlo(8, 16)
    True
    >>> "f32[8,16]" in step_hlo(8, 16, dialect="hlo")
    True
    """
    batch, d_model = _check_dims(batch, d_model)
    dialect = choice("dialect", dialect, ("stablehlo", "hlo"))
    jax = _jax()
    x = jax.ShapeDtypeStruct((batch, d_model), np.float32)
    w = jax.ShapeDtypeStruct((d_model, d_model), np.float32)
    lowered = jax.jit(_make_step()).lower(x, w)
    if dialect == "hlo":
        return lowered.compiler_ir("hlo").as_hlo_text()
    return lowered.as_text()


def call_times(batches: Sequence[int] = (8, 16, 32), d_model: int = 16,
               repeats: int = 20) -> pd.DataFrame:
    """Wall time of a jitted step's first call on each shape (trace + compile) and of a repeat.

    Machine-dependent: show it only where outputs are not compared.

    Returns
    -------
    pandas.DataFrame
        ``input_shape``, ``first_call_s`` and ``repeat_call_s`` (median of ``repeats``).

    Examples
    --------
    >>> df = call_times((4,), repeats=3)
    >>> bool(df.first_call_s.iloc[0] > df.repeat_call_s.iloc[0])
    True
    """
    batches = _int_tuple("batches", batches, minimum=1, maximum=4096)
    _, d_model = _check_dims(1, d_model)
    repeats = integer("repeats", repeats, minimum=1, maximum=1000)
    jax = _jax()
    step = jax.jit(_make_step())
    w = np.ones((d_model, d_model), np.float32)
    rows = []
    for b in batches:
        x = np.ones((b, d_model), np.float32)
        start = time.perf_counter()
        step(x, w).block_until_ready()
        first = time.perf_counter() - start
        again = []
        for _ in range(repeats):
            start = time.perf_counter()
            step(x, w).block_until_ready()
            again.append(time.perf_counter() - start)
        rows.append({"input_shape": f"({b}, {d_model})", "first_call_s": first,
                     "repeat_call_s": float(np.median(again))})
    return pd.DataFrame(rows)


def hlo_op_count(text: str) -> int:
    """Number of StableHLO operations in a program's text (occurrences of ``stablehlo.``).

    Constants count (``stablehlo.constant``), as do the ops inside a reduction's body.

    Examples
    --------
    >>> hlo_op_count("%0 = stablehlo.tanh %a\\n%1 = stablehlo.add %0, %0")
    2
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string of StableHLO, got {type(text).__name__}")
    return text.count("stablehlo.")


def _int_tuple(name: str, values, *, minimum: int, maximum: int, max_len: int = 64) -> tuple[int, ...]:
    return tuple(sequence(name, values, lambda n, v: integer(n, v, minimum=minimum, maximum=maximum),
                          max_length=max_len))


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def shape_compiles(batches: Sequence[int] = (8, 16, 32), repeat: int = 16,
                   d_model: int = 16) -> pd.DataFrame:
    """Call one jitted step with several batch sizes, then a repeated one: compiles per call.

    Each new input shape compiles a new program; a shape seen before is an
    in-memory cache hit and compiles nothing.

    Parameters
    ----------
    batches : sequence of int
        Batch sizes to call with, in order (1 to 4096 each).
    repeat : int
        A batch size called once more at the end.
    d_model : int
        Feature width (1 to 1024).

    Returns
    -------
    pandas.DataFrame
        ``call`` (1-based), ``input_shape`` (text), ``new_compiles``, ``cache_size``
        (compiled programs the jitted function holds, from its ``_cache_size()``).

    Examples
    --------
    >>> shape_compiles(batches=(4,), repeat=4).new_compiles.tolist()
    [1, 0]
    """
    batches = _int_tuple("batches", batches, minimum=1, maximum=4096)
    repeat, d_model = _check_dims(repeat, d_model)
    jax = _jax()
    step = jax.jit(_make_step())
    w = np.ones((d_model, d_model), np.float32)
    rows = []
    for i, b in enumerate((*batches, repeat), start=1):
        x = np.ones((b, d_model), np.float32)
        with watch_compiles() as log:
            step(x, w).block_until_ready()
        rows.append({"call": i, "input_shape": f"({b}, {d_model})",
                     "new_compiles": log.count("train_step"), "cache_size": step._cache_size()})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class BranchDemo:
    """Three ways to branch on a value inside a jitted step.

    ``traced_error``: the exception JAX raises for a Python ``if`` on a traced
    value. ``static``: compiles per call when the flag is a static argument (one
    program per value). ``select``: compiles per call with ``jnp.where`` (a
    ``select`` in the program: both sides computed, one kept; one program for every
    value). ``lax.cond`` would also give one program, but JAX NeuronX does not
    support it, so it is not the Neuron-safe answer.
    """

    traced_error: str
    static: pd.DataFrame
    select: pd.DataFrame


def branch_compiles(flags: Sequence[bool] = (True, False, True), d_model: int = 16) -> BranchDemo:
    """A value-dependent branch: an error when traced, separate graphs when static, one with ``jnp.where``.

    Parameters
    ----------
    flags : sequence of bool
        Values of the ``clip`` flag for successive calls.
    d_model : int
        Feature width.

    Returns
    -------
    BranchDemo

    Examples
    --------
    >>> d = branch_compiles((True, False, True))
    >>> d.traced_error, d.static.new_compiles.tolist(), d.select.new_compiles.tolist()
    ('TracerBoolConversionError', [1, 1, 0], [1, 0, 0])
    """
    flags = tuple(sequence("flags", flags, _flag, max_length=64))
    _, d_model = _check_dims(1, d_model)
    jax = _jax()
    jnp = jax.numpy
    x = np.ones((8, d_model), np.float32)
    w = np.ones((d_model, d_model), np.float32)

    def traced_step(x, w):
        y = x @ w
        if y.sum() > 0:  # a Python branch on a traced value
            y = jnp.tanh(y)
        return y.mean()

    try:
        jax.jit(traced_step)(x, w)
        error = "none"
    except jax.errors.TracerBoolConversionError as exc:
        error = type(exc).__name__

    def static_step(x, w, clip):
        y = x @ w
        if clip:  # a Python branch on a static (compile-time) value
            y = jnp.tanh(y)
        return y.mean()

    def select_step(x, w, clip):
        y = x @ w
        y = jnp.where(clip, jnp.tanh(y), y)  # both sides computed, one kept: Neuron-safe
        return y.mean()

    tables = []
    for fn, jit_kw in ((static_step, {"static_argnames": "clip"}), (select_step, {})):
        jitted = jax.jit(fn, **jit_kw)
        rows = []
        for i, flag in enumerate(flags, start=1):
            arg = bool(flag) if jit_kw else np.bool_(flag)
            with watch_compiles() as log:
                jitted(x, w, arg).block_until_ready()
            rows.append({"call": i, "clip": bool(flag), "new_compiles": log.count(fn.__name__),
                         "cache_size": jitted._cache_size()})
        tables.append(pd.DataFrame(rows))
    return BranchDemo(error, tables[0], tables[1])


def loop_vs_scan(depths: Sequence[int] = (2, 8, 32), d_model: int = 16, *,
                 compile: bool = True) -> pd.DataFrame:
    """A stack of layers written as a Python loop (unrolled) or with ``lax.scan``.

    The Python loop is traced layer by layer: the program grows with the depth and
    so does its compile time. ``lax.scan`` traces the layer once into a loop: the
    program's size does not depend on the depth.

    Parameters
    ----------
    depths : sequence of int
        Numbers of layers (1 to 512).
    d_model : int
        Feature width.
    compile : bool
        Also compile each program and time it (``compile_s``, machine-dependent).

    Returns
    -------
    pandas.DataFrame
        ``depth``, ``style`` ("python loop" / "lax.scan"), ``hlo_ops``,
        ``hlo_lines`` and ``compile_s`` (NaN when ``compile=False``).

    Examples
    --------
    >>> df = loop_vs_scan((2, 4), compile=False)
    >>> df.groupby("style").hlo_ops.apply(list).to_dict()
    {'lax.scan': [14, 14], 'python loop': [8, 16]}
    """
    depths = _int_tuple("depths", depths, minimum=1, maximum=512, max_len=16)
    _, d_model = _check_dims(1, d_model)
    if not isinstance(compile, (bool, np.bool_)):
        raise ValueError(f"compile must be True or False, got {compile!r}")
    jax = _jax()
    jnp, lax = jax.numpy, jax.lax
    rows = []
    for depth in depths:
        def python_loop(x, ws):
            for i in range(ws.shape[0]):
                x = jnp.tanh(x @ ws[i])
            return x

        def scanned(x, ws):
            def layer(h, w):
                return jnp.tanh(h @ w), None
            return lax.scan(layer, x, ws)[0]

        x = jax.ShapeDtypeStruct((8, d_model), np.float32)
        ws = jax.ShapeDtypeStruct((depth, d_model, d_model), np.float32)
        for style, fn in (("python loop", python_loop), ("lax.scan", scanned)):
            lowered = jax.jit(fn).lower(x, ws)
            text = lowered.as_text()
            seconds = float("nan")
            if compile:
                start = time.perf_counter()
                lowered.compile()
                seconds = time.perf_counter() - start
            rows.append({"depth": depth, "style": style, "hlo_ops": hlo_op_count(text),
                         "hlo_lines": text.count("\n"), "compile_s": seconds})
    return pd.DataFrame(rows)


def static_loop_compiles(trip_counts: Sequence[int] = (4, 8, 4), d_model: int = 16) -> pd.DataFrame:
    """A ``lax.fori_loop`` with a static trip count against one with a traced trip count.

    With a Python ``int`` as the bound (a static argument), the trip count is a
    constant in the program: a static loop, one program per trip count. With the
    bound passed as an array it is an input of the program, so one program serves
    every count, but its loop is a ``while`` whose condition reads a value only known
    at run time: a dynamic loop, which JAX NeuronX does not support ("only static
    while loops are supported").

    Returns
    -------
    pandas.DataFrame
        ``style``, ``call``, ``trip_count``, ``new_compiles``, ``bound`` ("a constant
        in the program" or "an input of the program", read from the StableHLO text).

    Examples
    --------
    >>> df = static_loop_compiles((4, 8, 4))
    >>> df.groupby("style", sort=False).new_compiles.apply(list).to_dict()
    {'static bound': [1, 1, 0], 'traced bound': [1, 0, 0]}
    """
    counts = _int_tuple("trip_counts", trip_counts, minimum=1, maximum=1024, max_len=16)
    _, d_model = _check_dims(1, d_model)
    jax = _jax()
    jnp, lax = jax.numpy, jax.lax
    x = np.ones((8, d_model), np.float32)
    w = np.full((d_model, d_model), 0.01, np.float32)

    def static_bound(x, w, n):
        return lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w), x)

    def traced_bound(x, w, n):
        return lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w), x)

    def bound(text: str) -> str:
        cond = text.split("cond {", 1)[1].split("} do {", 1)[0]
        return "a constant in the program" if "stablehlo.constant" in cond else "an input of the program"

    rows = []
    for style, fn, jit_kw in (("static bound", static_bound, {"static_argnames": "n"}),
                              ("traced bound", traced_bound, {})):
        jitted = jax.jit(fn, **jit_kw)
        for i, n in enumerate(counts, start=1):
            arg = int(n) if jit_kw else np.int32(n)
            with watch_compiles() as log:
                jitted(x, w, arg).block_until_ready()
            text = jitted.lower(x, w, arg).as_text()
            rows.append({"style": style, "call": i, "trip_count": int(n),
                         "new_compiles": log.count(fn.__name__), "bound": bound(text)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class MaskDemo:
    """Data-dependent shapes and their fixed-size replacements (see :func:`masked_shape_compiles`).

    ``traced_error``: what JAX raises for boolean indexing inside ``jit``. ``table``:
    one row per style with the compiles over all batches and the output shapes seen.
    """

    traced_error: str
    table: pd.DataFrame


def masked_shape_compiles(kept_per_batch: Sequence[int] = (3, 5, 3, 7), n_rows: int = 8,
                          d_model: int = 16) -> MaskDemo:
    """Rows selected by a data-dependent mask: a new shape per count, or one fixed shape.

    Each batch has ``n_rows`` rows, of which the first ``kept_per_batch[i]`` pass a
    mask (a stand-in for ``nonzero``, boolean indexing, or the tokens one MoE expert
    receives). Three styles:

    * "boolean index, then jit": ``x[mask]`` eagerly, then a jitted step on the result:
      one program per distinct count (inside ``jit`` the indexing is an error);
    * "fixed-size mask (jnp.where)": the step keeps all ``n_rows`` rows and zeroes the
      ones the mask drops, dividing by the mask's sum: one program;
    * "nonzero(size=n_rows)": ``jnp.nonzero(mask, size=n_rows, fill_value=0)`` gathers
      the kept rows into a fixed-size buffer padded with row 0, masked out: one program.

    Returns
    -------
    MaskDemo

    Examples
    --------
    >>> d = masked_shape_compiles((3, 5, 3, 7))
    >>> d.traced_error, d.table.compiles.tolist()
    ('NonConcreteBooleanIndexError', [3, 1, 1])
    """
    n_rows = integer("n_rows", n_rows, minimum=1, maximum=4096)
    kept = _int_tuple("kept_per_batch", kept_per_batch, minimum=0, maximum=n_rows, max_len=64)
    _, d_model = _check_dims(1, d_model)
    jax = _jax()
    jnp = jax.numpy
    w = np.full((d_model, d_model), 0.01, np.float32)
    x = np.ones((n_rows, d_model), np.float32)
    masks = [np.arange(n_rows) < k for k in kept]

    try:
        jax.jit(lambda x, m: x[m])(x, masks[0])
        error = "none"
    except jax.errors.NonConcreteBooleanIndexError as exc:
        error = type(exc).__name__

    def step_on_kept(xk, w):
        h = jnp.tanh(xk @ w)
        return jnp.sum(h * h) / jnp.maximum(xk.shape[0], 1)

    def step_masked(x, m, w):
        h = jnp.tanh(x @ w)
        return jnp.sum(m[:, None] * h * h) / jnp.maximum(jnp.sum(m), 1)

    def step_nonzero(x, m, w):
        idx = jnp.nonzero(m, size=x.shape[0], fill_value=0)[0]
        valid = jnp.arange(x.shape[0]) < jnp.sum(m)
        h = jnp.tanh(x[idx] @ w)
        return jnp.sum(valid[:, None] * h * h) / jnp.maximum(jnp.sum(m), 1)

    rows = []
    for style, fn in (("boolean index, then jit", step_on_kept),
                      ("fixed-size mask (jnp.where)", step_masked),
                      ("nonzero(size=n_rows)", step_nonzero)):
        jitted = jax.jit(fn)
        shapes = []
        with watch_compiles() as log:
            for m in masks:
                if fn is step_on_kept:
                    xk = x[m]
                    shapes.append(xk.shape[0])
                    jitted(xk, w).block_until_ready()
                else:
                    shapes.append(n_rows)
                    jitted(x, m.astype(np.float32) if fn is step_masked else m, w).block_until_ready()
        rows.append({"style": style, "batches": len(masks), "compiles": log.count(fn.__name__),
                     "rows_per_step": ", ".join(str(s) for s in dict.fromkeys(shapes))})
    return MaskDemo(error, pd.DataFrame(rows))


def ragged_batch_compiles(n_samples: int = 1000, batch_size: int = 64, n_epochs: int = 2,
                          d_model: int = 16) -> pd.DataFrame:
    """Loop over a dataset in batches three ways and count the compiles.

    "keep the short last batch" compiles a second program for the last batch
    (``n_samples mod batch_size`` rows); "drop_last" skips it; "pad the last batch"
    fills it with zero rows and a mask so every step has the same shape.

    Returns
    -------
    pandas.DataFrame
        ``strategy``, ``steps_per_epoch``, ``shapes`` (text), ``compiles`` (over
        all epochs), ``samples_used`` (per epoch).

    Examples
    --------
    >>> ragged_batch_compiles(100, 32, 1).compiles.tolist()
    [2, 1, 1]
    """
    n_samples = integer("n_samples", n_samples, minimum=1, maximum=100_000)
    batch_size = integer("batch_size", batch_size, minimum=1, maximum=4096)
    n_epochs = integer("n_epochs", n_epochs, minimum=1, maximum=10)
    _, d_model = _check_dims(1, d_model)
    if n_samples // batch_size * n_epochs > 2000:
        raise ValueError("n_samples / batch_size × n_epochs must be at most 2,000 steps")
    jax = _jax()
    jnp = jax.numpy
    data = np.ones((n_samples, d_model), np.float32)
    w = np.ones((d_model, d_model), np.float32)

    def make_step():  # a new function per strategy, so no strategy reuses another's programs
        def train_step(x, mask, w):
            h = jnp.tanh(x @ w)
            return jnp.sum(mask[:, None] * h * h) / jnp.maximum(jnp.sum(mask), 1.0)
        return train_step

    rows = []
    for strategy in ("keep the short last batch", "drop_last", "pad the last batch"):
        step = jax.jit(make_step())
        shapes, used, steps = [], 0, 0
        with watch_compiles() as log:
            for _ in range(n_epochs):
                used = steps = 0
                for start in range(0, n_samples, batch_size):
                    x = data[start:start + batch_size]
                    if len(x) < batch_size and strategy == "drop_last":
                        continue
                    mask = np.ones(len(x), np.float32)
                    used += len(x)
                    if len(x) < batch_size and strategy == "pad the last batch":
                        pad = batch_size - len(x)
                        x = np.concatenate([x, np.zeros((pad, d_model), np.float32)])
                        mask = np.concatenate([mask, np.zeros(pad, np.float32)])
                    if x.shape not in shapes:
                        shapes.append(x.shape)
                    step(x, mask, w).block_until_ready()
                    steps += 1
        rows.append({"strategy": strategy, "steps_per_epoch": steps,
                     "shapes": ", ".join(f"{a}×{b}" for a, b in shapes),
                     "compiles": log.count("train_step"), "samples_used": used})
    return pd.DataFrame(rows)


def graph_cut_compiles(n_steps: int = 3, d_model: int = 16) -> pd.DataFrame:
    """One jitted step versus a step cut in two by reading a value on the host mid-step.

    "one graph": forward, loss-spike guard (``jnp.where``) and update in one
    program; the host reads the loss after the step. "cut by .item()": the host
    reads the loss between forward and update (as ``loss.item()`` does in
    PyTorch/XLA) to decide in Python, so the step is two programs and two
    dispatches with a device-to-host wait between them.

    Returns
    -------
    pandas.DataFrame
        ``style``, ``programs_compiled``, ``dispatches_per_step``, ``host_reads_per_step``.

    Examples
    --------
    >>> graph_cut_compiles(2).programs_compiled.tolist()
    [1, 2]
    """
    n_steps = integer("n_steps", n_steps, minimum=1, maximum=100)
    _, d_model = _check_dims(1, d_model)
    jax = _jax()
    jnp = jax.numpy
    x = np.ones((8, d_model), np.float32)
    w0 = np.full((d_model, d_model), 0.01, np.float32)

    def forward(w):  # loss and a gradient-like update direction, cheap to compile
        h = jnp.tanh(x @ w)
        return jnp.mean(h * h), x.T @ h

    def fused_step(w):
        loss, g = forward(w)
        lr = jnp.where(loss > 10.0, 0.0, 0.1)  # the guard stays on the device
        return w - lr * g, loss

    def update(w, g, lr):
        return w - lr * g

    rows = []
    fused = jax.jit(fused_step)
    calls = reads = 0
    with watch_compiles() as log:
        w = w0
        for _ in range(n_steps):
            w, loss = fused(w)
            calls += 1
            float(loss)  # read after the step: no cut inside it
            reads += 1
    rows.append({"style": "one graph", "programs_compiled": log.count("fused_step"),
                 "dispatches_per_step": calls // n_steps, "host_reads_per_step": reads // n_steps})
    fwd, upd = jax.jit(forward), jax.jit(update)
    calls = reads = 0
    with watch_compiles() as log:
        w = w0
        for _ in range(n_steps):
            loss, g = fwd(w)
            lr = 0.0 if float(loss) > 10.0 else 0.1  # .item(): wait for the device mid-step
            reads += 1
            w = upd(w, g, np.float32(lr))
            calls += 2
    rows.append({"style": "cut by .item()",
                 "programs_compiled": log.count("forward") + log.count("update"),
                 "dispatches_per_step": calls // n_steps, "host_reads_per_step": reads // n_steps})
    return pd.DataFrame(rows)


def persistent_cache_demo(cache_dir: str | None = None) -> pd.DataFrame:
    """JAX's on-disk compilation cache: keyed by the program, the compiler options and the version.

    Turns the persistent cache on in ``cache_dir`` (a new ``tempfile.mkdtemp()``
    directory, removed afterwards, when ``None``), with the thresholds that keep
    small programs out of it set to zero, and runs four events:

    1. first compile of a program (a miss: one entry written);
    2. the same program after clearing every in-memory cache, as a new process
       would (a hit: nothing compiled by XLA, nothing written);
    3. the same program with another input shape (a different program: a miss);
    4. the first shape again with another compiler option (a miss: options are in the key).

    The cache settings are restored afterwards. The jaxlib version is part of the
    key as well (``jax/_src/cache_key.py``), which one installation cannot show.

    Returns
    -------
    pandas.DataFrame
        ``event``, ``cache_hits``, ``cache_misses``, ``entries_on_disk``.

    Examples
    --------
    >>> persistent_cache_demo().entries_on_disk.tolist()
    [1, 1, 2, 3]
    """
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise ValueError(f"cache_dir must be a directory path or None, got {type(cache_dir).__name__}")
    jax = _jax()
    from jax.experimental.compilation_cache import compilation_cache as cc

    own = cache_dir is None
    path = tempfile.mkdtemp(prefix="jax-cache-demo-") if own else os.fspath(cache_dir)
    if not own and not os.path.isdir(path):
        raise ValueError(f"cache_dir must be an existing directory, got {path!r}")
    saved = {name: getattr(jax.config, name) for name in (
        "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes")}
    train_step = _make_step()
    d = 16
    w = np.ones((d, d), np.float32)

    def entries() -> int:
        return sum(1 for n in os.listdir(path) if n.endswith("-cache"))

    rows = []
    try:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        cc.reset_cache()
        events = (
            ("first compile, input (8, 16)", {}, 8, False),
            ("same program, in-memory caches cleared (a new process)", {}, 8, True),
            ("same program, input (32, 16)", {}, 32, False),
            ("input (8, 16), compiler option xla_backend_optimization_level=1",
             {"xla_backend_optimization_level": 1}, 8, False),
        )
        for label, options, batch, clear in events:
            if clear:
                jax.clear_caches()
            step = jax.jit(train_step, compiler_options=options or None)
            with watch_compiles() as log:
                step(np.ones((batch, d), np.float32), w).block_until_ready()
            rows.append({"event": label, "cache_hits": log.cache_hits,
                         "cache_misses": log.cache_misses, "entries_on_disk": entries()})
    finally:
        for name, value in saved.items():
            jax.config.update(name, value)
        cc.reset_cache()
        if own:
            shutil.rmtree(path, ignore_errors=True)
    return pd.DataFrame(rows)


def xla_dump_files(batch: int = 8, d_model: int = 16) -> list[str]:
    """What ``--xla_dump_to`` writes for one compile: the kinds of file, in sorted order.

    Compiles the training-step stand-in with the XLA debug option ``xla_dump_to``
    pointing at a temporary directory (removed afterwards) and returns the file
    names with the per-process module number and program name removed
    (``module_0007.jit_train_step.before_optimizations.txt`` becomes
    ``before_optimizations.txt``). On Neuron the same flag, set through
    ``XLA_FLAGS`` before JAX starts (AWS, "JAX NeuronX Environment Variables"),
    dumps the HLO the Neuron plugin compiles; on the CPU it also shows the CPU
    backend's own files.

    Examples
    --------
    >>> files = xla_dump_files()
    >>> "before_optimizations.txt" in files
    True
    """
    batch, d_model = _check_dims(batch, d_model)
    jax = _jax()
    path = tempfile.mkdtemp(prefix="xla-dump-demo-")
    try:
        x = jax.ShapeDtypeStruct((batch, d_model), np.float32)
        w = jax.ShapeDtypeStruct((d_model, d_model), np.float32)
        jax.jit(_make_step()).lower(x, w).compile(compiler_options={"xla_dump_to": path})
        kinds = set()
        for name in os.listdir(path):
            m = re.match(r"^module_\d+\.[^.]+\.(.+)$", name)
            if m:
                kinds.add(m[1])
        return sorted(kinds)
    finally:
        shutil.rmtree(path, ignore_errors=True)
