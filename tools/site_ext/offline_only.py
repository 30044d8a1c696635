"""Sphinx extension for the course site: keep every page free of remote resources.

jupyter-book 1.x always loads ``sphinx_thebe``, which puts an inline script naming thebe's
CDN URL (unpkg.com) on every page, declared twice (a JavaScript error on load), plus its
config block and stylesheet. The site never launches thebe (widgets run in JupyterLab or on
Binder), so all of it is removed here.
"""

from __future__ import annotations

from docutils import nodes


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", "") or "")
    return "thebe" in name.lower() or "THEBE_JS_URL" in body


def strip_assets(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [a for a in context[key] if not _is_thebe(a)]


def strip_config_node(app, doctree, docname) -> None:
    for node in list(doctree.findall(nodes.raw)):
        if "text/x-thebe-config" in node.astext():
            node.parent.remove(node)


def setup(app):
    app.connect("html-page-context", strip_assets, priority=900)
    app.connect("doctree-resolved", strip_config_node, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
