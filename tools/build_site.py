#!/usr/bin/env python3
"""Build the course as a static HTML site with jupyter-book 1.x, offline.

    python3 tools/course.py site                    # set up .venv, then this
    .venv/bin/python tools/build_site.py            # -> build/site/_build/html/index.html
    .venv/bin/python tools/build_site.py --execute  # first re-run every notebook (fresh kernels)

Every ``notebooks/NN_*.ipynb`` becomes a page, in order, with a table of contents on a home
page and in the sidebar. By default the stored outputs are used: the notebooks are stored
executed and checked by nbval, and their static charts are SVG, so the pages show them without
a kernel or a network. The site references no CDN:

* MathJax 2.7 is copied from the ``jupyter-server-mathjax`` wheel into ``_static/mathjax``;
* widgets cannot run on a static page; each widget output is replaced by its stored default
  view (a static SVG chart) and a note saying where to run it (JupyterLab or Binder), and myst-nb's widget scripts (from CDNs) are switched off;
* links out of ``notebooks/`` (the README's chapter list, ``data/``) are rewritten: the chapter
  list to the site's home page, everything else to the repository on GitHub.

jupyter-book 2 (mystmd) is not used: its HTML export fetches a theme from the network
(``../shared/reference/jupyter_stack_notes.md``).
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "site"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
BINDER = "https://mybinder.org/v2/gh/{repo}/HEAD?labpath=notebooks%2F{name}"
LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def repository_url() -> str:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return meta.get("urls", {}).get("Repository", "").rstrip("/")


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def chapter_title(nb: dict, fallback: str) -> str:
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def rewrite_link(target: str, repo: str, pages: set[str]) -> str:
    """Where a notebook's relative link should point on the site."""
    if target in ("#chapters", "00_start_here.ipynb#chapters"):
        return "index.md#chapters"  # "Contents" (tools/navigation.py): the site's own contents page
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return target  # http(s), mailto, in-page anchors
    path, _, anchor = target.partition("#")
    if Path(path).name in pages and "/" not in path:
        return target  # another chapter: MyST turns it into a page link
    if path in ("../README.md", "../README.md/"):
        return "index.md" + (f"#{anchor}" if anchor else "")
    resolved = (Path("notebooks") / path).as_posix()
    parts = []
    for part in resolved.split("/"):
        if part == "..":
            parts = parts[:-1]
        elif part not in ("", "."):
            parts.append(part)
    return f"{repo}/blob/HEAD/{'/'.join(parts)}" + (f"#{anchor}" if anchor else "")


def widget_note(name: str, repo: str) -> dict:
    binder = BINDER.format(repo=repo.removeprefix("https://github.com/"), name=name)
    html = ('<div class="admonition note trainium-widget-note"><p class="admonition-title">'
            'Interactive widget</p><p>The chart above is this widget\'s default view. To move '
            'its controls, open the chapter in JupyterLab (<code>python3 tools/course.py lab</code>) '
            f'or <a href="{binder}">on Binder</a>: it needs a running Python kernel.</p></div>')
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/html": html, "text/plain": "[interactive widget: needs a kernel]"}}


def stage_notebook(src: Path, dest: Path, repo: str, pages: set[str]) -> dict:
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb = copy.deepcopy(nb)
    n_widgets = 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            cell["source"] = LINK.sub(
                lambda m: m.group(1) + rewrite_link(m.group(2), repo, pages) + m.group(3), text)
        elif cell["cell_type"] == "code":
            outputs = []
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if WIDGET_MIME in data:
                    # the widget's default view, drawn when the notebook was executed
                    static = next((m for m in ("image/svg+xml", "text/html") if m in data), None)
                    if static:
                        outputs.append({"output_type": "display_data", "metadata": {}, "data": {
                            static: data[static], "text/plain": "[the widget's default view]"}})
                    outputs.append(widget_note(src.name, repo))
                    n_widgets += 1
                else:
                    outputs.append(out)
            cell["outputs"] = outputs
    nb.get("metadata", {}).pop("widgets", None)
    dest.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"page": src.stem, "title": chapter_title(nb, src.stem), "widgets": n_widgets}


def readme_intro(repo: str) -> str:
    """The README's opening paragraphs (before its first ## heading), links made absolute."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split("\n## ", 1)[0]
    lines = [ln for ln in body.splitlines() if not ln.startswith("# ") and "badge" not in ln]

    def absolute(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        return f"{m.group(1)}{repo}/blob/HEAD/{target}{m.group(3)}"

    return LINK.sub(absolute, "\n".join(lines)).strip()


def write_book(src: Path, chapters: list[dict], repo: str) -> None:
    binder = BINDER.format(repo=repo.removeprefix("https://github.com/"),
                           name="00_start_here.ipynb")
    toc_lines = "\n".join(f"1. [{c['title']}]({c['page']}.ipynb)" for c in chapters)
    (src / "index.md").write_text(f"""# Trainium Lab

{readme_intro(repo)}

## Chapters

{toc_lines}

The [cheat sheet](cheatsheet.md) gathers every rule of thumb on one page.

## Reading this site

These pages show each chapter as it was last run: the text, the code, its printed results and
its charts. The widgets need a running Python kernel: run the course locally
(`python3 tools/course.py lab`, see the [README]({repo}#readme)) or [on Binder]({binder}).
The site works offline: nothing on it is loaded from another server.
""", encoding="utf-8")
    # the cheat sheet (generated by tools/cheatsheet.py), its chapter links pointing at pages
    sheet = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    (src / "cheatsheet.md").write_text(
        re.sub(r"\(\.\./notebooks/(\d\d_[^)]+)\.ipynb\)", r"(\1.ipynb)", sheet), encoding="utf-8")
    (src / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nchapters:\n"
        + "".join(f"  - file: {c['page']}\n" for c in chapters) + "  - file: cheatsheet\n",
        encoding="utf-8")
    config = {
        "title": "Trainium Lab",
        "author": "Trainium Lab contributors",
        "copyright": "2026",
        "only_build_toc_files": True,
        "exclude_patterns": ["_build", "_extra", "_ext", "**.ipynb_checkpoints"],
        # notebooks arrive executed (stored outputs, or re-run by --execute before staging)
        "execute": {"execute_notebooks": "off"},
        "parse": {"myst_enable_extensions": ["colon_fence", "dollarmath"]},
        "html": {"use_repository_button": True, "home_page_in_navbar": True,
                 "use_multitoc_numbering": False},
        "repository": {"url": repo, "branch": "main"},
        "launch_buttons": {"binderhub_url": "", "thebe": False},
        # tools/site_ext/offline_only.py: drops sphinx-thebe's CDN script from every page
        "sphinx": {"local_extensions": {"offline_only": "_ext"}, "config": {
            "myst_heading_anchors": 3,
            # MathJax 2 from the jupyter-server-mathjax wheel, not from a CDN. Copied as an
            # "extra" folder (to the site's root), not a static one: jupyter-book would add
            # every .js file under _static to every page. The path is relative to _static.
            "html_extra_path": ["_extra"],
            "mathjax_path": "../mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full",
            "mathjax2_config": {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                                            "displayMath": [["\\[", "\\]"]],
                                            "processRefs": False,
                                            # myst-nb marks the page tex2jax_ignore and the
                                            # formulas "math" (myst-parser's mathjax_classes)
                                            "processClass":
                                                "tex2jax_process|mathjax_process|math|output_area",
                                            "processEnvironments": False},
                                 # the wheel ships only the STIX-Web fonts (as Jupyter's
                                 # classic notebook configured them)
                                 "HTML-CSS": {"availableFonts": [], "preferredFont": None,
                                              "webFont": "STIX-Web", "imageFont": None},
                                 "SVG": {"font": "STIX-Web"},
                                 "MathMenu": {"showFontMenu": False}},
            "mathjax3_config": None,
            "nb_ipywidgets_js": {},
            "html_show_sourcelink": False,
            "suppress_warnings": ["mystnb.unknown_mime_type"],
        }},
    }
    # JSON is valid YAML: no PyYAML needed here.
    (src / "_config.yml").write_text(json.dumps(config, indent=2), encoding="utf-8")


def vendor_mathjax(extra: Path) -> None:
    import jupyter_server_mathjax

    mathjax = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (mathjax / "MathJax.js").is_file():
        raise SystemExit(f"MathJax not found in {mathjax}; pip install jupyter-server-mathjax")
    shutil.copytree(mathjax, extra / "mathjax")


#: the theme's buttons whose ``aria-label`` leaves out their visible text (axe-core's
#: ``label-content-name-mismatch``, WCAG 2.5.3 "Label in Name"): the search field shows
#: "Search Ctrl+K" but is named "Search"; the colour-mode switch is named "Color mode" over
#: icons. Without the ``aria-label`` their name comes from what they show (the switch gets its
#: words as visually hidden text).
SEARCH_BUTTON = re.compile(r'(<button\b[^>]*\bsearch-button-field\b[^>]*?)\s+aria-label="[^"]*"')
THEME_SWITCH = re.compile(r'(<button\b[^>]*\btheme-switch-button\b[^>]*?)\s+aria-label="([^"]*)"([^>]*>)')
CHART_IMG = re.compile(r'<img alt="[^"]*" src="(_images/[0-9a-f]+\.svg)"')
SVG_LABEL = re.compile(r'<svg\b[^>]*\baria-label="([^"]*)"')


def accessible_pages(html: Path) -> None:
    """Fix the theme's buttons (see ``SEARCH_BUTTON``) and give every chart image its chart's
    description (the SVG's ``aria-label``, from the Vega-Lite ``description``) as ``alt`` text
    instead of its file name."""
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8")

        def alt_text(m: re.Match) -> str:
            svg = html / m.group(1)
            label = SVG_LABEL.search(svg.read_text(encoding="utf-8")[:4000]) if svg.is_file() else None
            return f'<img alt="{label.group(1)}" src="{m.group(1)}"' if label else m.group(0)

        fixed = SEARCH_BUTTON.sub(r"\1", text)
        fixed = THEME_SWITCH.sub(r'\1\3<span class="visually-hidden">\2</span>', fixed)
        fixed = CHART_IMG.sub(alt_text, fixed)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def build(out: Path = DEFAULT_OUT, *, execute: bool = False, quiet: bool = False) -> Path:
    """Stage the book under ``out/src``, build it, return the HTML folder."""
    start = time.perf_counter()
    repo = repository_url()
    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    (src / "_extra").mkdir(parents=True)
    paths = notebooks()
    if not paths:
        raise SystemExit("no notebooks/NN_*.ipynb to build")
    pages = {p.name for p in paths}
    if execute:  # fresh outputs, made exactly as tools/execute_notebooks.py makes stored ones
        sys.path.insert(0, str(ROOT / "tools"))
        import execute_notebooks

        fresh = out / "executed"
        if fresh.exists():
            shutil.rmtree(fresh)
        fresh.mkdir(parents=True)
        for i, p in enumerate(paths):
            shutil.copy2(p, fresh / p.name)
            seconds = execute_notebooks.execute(fresh / p.name)
            print(f"[site] executed {p.name} in {seconds:.1f} s", flush=True)
            paths[i] = fresh / p.name
    chapters = [stage_notebook(p, src / p.name, repo, pages) for p in paths]
    write_book(src, chapters, repo)
    vendor_mathjax(src / "_extra")
    (src / "_ext").mkdir()
    shutil.copy2(ROOT / "tools" / "site_ext" / "offline_only.py", src / "_ext")
    html = out / "_build" / "html"
    if html.exists():
        shutil.rmtree(html)
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jb), "build", str(src), "--path-output", str(out), "--builder", "html",
           "--keep-going"]
    if quiet:
        cmd.append("--quiet")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=quiet, text=True)
    if proc.returncode != 0 or not (html / "index.html").is_file():
        if quiet:
            sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"jupyter-book failed (exit {proc.returncode})")
    accessible_pages(html)
    print(f"[site] {len(chapters)} chapters -> {html / 'index.html'} "
          f"in {time.perf_counter() - start:.1f} s", flush=True)
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output folder (default build/site; HTML in OUT/_build/html)")
    parser.add_argument("--execute", action="store_true",
                        help="re-execute every notebook in a fresh kernel first (default: stored outputs)")
    parser.add_argument("--quiet", action="store_true", help="only print jupyter-book's output on failure")
    args = parser.parse_args(argv)
    build(args.out.resolve(), execute=args.execute, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
