"""One call at the top of every chapter: offline charts and tidy printouts.

``setup()`` makes static charts render as SVG (drawn by vl-convert in the
kernel, so stored outputs show them anywhere, offline; data and coordinates
rounded to what a reader can see, so they are the same on every processor) and makes interactive
``JupyterChart`` widgets load their JavaScript from vl-convert instead of a CDN.
Altair 6's default and mimetype renderers do not work offline in JupyterLab
(see ``../shared/reference/jupyter_stack_notes.md``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["setup", "enable_offline_charts"]


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "trainium_lab"


def enable_offline_charts() -> None:
    """Make ``alt.JupyterChart`` work without a network, caching the JS bundle.

    ``alt.JupyterChart.enable_offline()`` bundles vega-embed with vl-convert,
    which takes ~3 s in every kernel. The bundle depends only on the installed
    altair and vl-convert versions, so it is cached on disk under that key.
    """
    import altair as alt
    import vl_convert as vlc

    if getattr(alt.JupyterChart, "_is_offline", False):
        return
    key = hashlib.sha256(f"{alt.__version__}-{vlc.__version__}".encode()).hexdigest()[:16]
    path = _cache_dir() / f"jupyterchart-{key}.js"
    try:
        bundle = path.read_text(encoding="utf-8")
    except OSError:
        alt.JupyterChart.enable_offline()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(alt.JupyterChart._esm, encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass  # a read-only home only costs the 3 s again next time
        return
    alt.JupyterChart._esm = bundle
    alt.JupyterChart._is_offline = True


def setup() -> None:
    """Configure Altair and pandas for a chapter notebook."""
    import altair as alt
    import pandas as pd

    from trainium_lab.charts import base

    alt.renderers.enable(base.RENDERER)
    alt.theme.enable(base.THEME)  # live charts use the font and label limits of the static ones
    enable_offline_charts()
    pd.set_option("display.max_colwidth", 120)
    pd.set_option("display.width", 160)


def answer(markdown_text: str, summary: str = "Show the answer"):
    """A folded answer whose numbers were computed in the cell that calls it.

    Returns an ``IPython.display.Markdown`` object holding a ``<details>`` block,
    so worked problems keep their answer hidden until the learner opens it.
    """
    from IPython.display import Markdown

    return Markdown(f"<details><summary>{summary}</summary>\n\n{markdown_text}\n\n</details>")


def sources(entity: str, fields: list[str] | None = None):
    """The sourced facts of one entity as a small table (value, unit, status, source)."""
    from trainium_lab import specs

    df = specs.facts(entity=entity)
    if fields is not None:
        df = df[df["field"].isin(fields)]
    return df[["field", "value", "unit", "status", "source", "note"]].reset_index(drop=True)
