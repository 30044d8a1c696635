#!/usr/bin/env python3
"""Generate the navigation cells of every chapter and the README's chapter list.

    python tools/navigation.py          # rewrite what is out of date
    python tools/navigation.py --check  # exit 1 if anything is out of date

A chapter is ``notebooks/NN_name.ipynb``; its title is the first ``# `` heading.
The first and last cells of each notebook (tagged ``navigation``) hold a line
"previous · contents · next" and a Binder link; the README holds the chapter
list between ``<!-- chapters:start -->`` and ``<!-- chapters:end -->``.

"Contents" is chapter 00's chapter list (its cell tagged ``chapter-list``, anchored ``#chapters``):
a link inside ``notebooks/``, so it works in JupyterLab (which serves that folder: a link to
``../README.md`` went outside it and did nothing), on GitHub and on the site (where
``tools/build_site.py`` points it at the site's own contents page).
Idempotent: running it twice changes nothing the second time.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import quote

import json

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
TAG = "navigation"
START, END = "<!-- chapters:start -->", "<!-- chapters:end -->"
CHAPTER_LIST_TAG = "chapter-list"
#: the id of chapter 00's chapter list, the target of every "Contents" link
CONTENTS_ANCHOR = "chapters"


def repository() -> str:
    """``owner/name`` of the GitHub repository, from pyproject's [project.urls]."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    url = meta["project"]["urls"]["Repository"]
    return url.rstrip("/").split("github.com/")[-1]


def binder_url(path: str | None = None) -> str:
    base = f"https://mybinder.org/v2/gh/{repository()}/HEAD"
    return base if path is None else f"{base}?labpath={quote(path, safe='')}"


def chapters() -> list[tuple[str, str]]:
    """(file name, title) for every chapter, in order."""
    out = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        title = path.stem
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown" or TAG in cell.get("metadata", {}).get("tags", []):
                continue
            match = re.search(r"^# (.+)$", "".join(cell["source"]), flags=re.M)
            if match:
                title = match.group(1).strip()
                break
        out.append((path.name, title))
    return out


def nav_markdown(name: str, chapter_list: list[tuple[str, str]]) -> str:
    names = [n for n, _ in chapter_list]
    i = names.index(name)
    parts = []
    if i > 0:
        parts.append(f"[← {chapter_list[i - 1][1]}]({names[i - 1]})")
    parts.append(f"[Contents]({'' if i == 0 else names[0]}#{CONTENTS_ANCHOR})")
    if i + 1 < len(names):
        parts.append(f"[{chapter_list[i + 1][1]} →]({names[i + 1]})")
    parts.append(f"[Open in Binder]({binder_url('notebooks/' + name)})")
    return " · ".join(parts)


def _nav_cell(text: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {"tags": [TAG]}, "source": text}


def updated_notebook(path: Path, chapter_list: list[tuple[str, str]]) -> tuple[str, str]:
    """(old text, new text) of a notebook with fresh navigation cells."""
    old = path.read_text(encoding="utf-8")
    nb = json.loads(old)
    cells = [c for c in nb["cells"] if TAG not in c.get("metadata", {}).get("tags", [])]
    text = nav_markdown(path.name, chapter_list)
    nb["cells"] = [_nav_cell(text, "nav-top"), *cells, _nav_cell(text, "nav-bottom")]
    for cell in nb["cells"]:
        if CHAPTER_LIST_TAG in cell.get("metadata", {}).get("tags", []):
            cell["source"] = (f'<a id="{CONTENTS_ANCHOR}"></a>\n\n'
                              + chapter_list_markdown(chapter_list, prefix=""))
    for cell in nb["cells"]:  # nbformat's layout: a source is a list of lines (a small diff)
        if isinstance(cell.get("source"), str):
            cell["source"] = cell["source"].splitlines(keepends=True)
    # nbformat's own layout: indent 1, sorted keys, trailing newline
    new = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return old, new


def update_notebook(path: Path) -> bool:
    old, new = updated_notebook(path, chapters())
    if _normal(json.loads(old)) != _normal(json.loads(new)):
        path.write_text(new, encoding="utf-8")
        return True
    return False


def chapter_list_markdown(chapter_list: list[tuple[str, str]], prefix: str) -> str:
    """A numbered Markdown list of chapters, linking to ``prefix + file``."""
    return "\n".join(f"- [{title}]({prefix}{name})" for name, title in chapter_list)


def readme_block(chapter_list: list[tuple[str, str]]) -> str:
    return "\n".join([START, "", chapter_list_markdown(chapter_list, "notebooks/"), "", END])


def updated_readme() -> tuple[str, str]:
    old = README.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), flags=re.S)
    if not pattern.search(old):
        raise SystemExit(f"README.md has no {START} ... {END} block")
    block = readme_block(chapters())
    new = pattern.sub(lambda _m: block, old)
    return old, new


def update_readme() -> bool:
    old, new = updated_readme()
    if old != new:
        README.write_text(new, encoding="utf-8")
    return old != new


def _normal(nb: dict) -> dict:
    """Join list-valued sources so the two layouts nbformat accepts compare equal."""
    for cell in nb["cells"]:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    return nb


def stale() -> list[str]:
    """Files whose generated parts are out of date."""
    out = []
    chapter_list = chapters()
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        old, new = updated_notebook(path, chapter_list)
        if _normal(json.loads(old)) != _normal(json.loads(new)):
            out.append(str(path.relative_to(ROOT)))
    old, new = updated_readme()
    if old != new:
        out.append("README.md")
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        bad = stale()
        for name in bad:
            print(f"out of date: {name} (run python tools/navigation.py)")
        return 1 if bad else 0
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        if update_notebook(path):
            print(f"updated {path.name}")
    if update_readme():
        print("updated README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
