"""The static course site: built offline by one command, every chapter with its charts, a table
of contents, links that resolve, and nothing loaded from another host.

The site is built once per run (``tools/build_site.py``, jupyter-book 1.x, stored outputs) into a
temporary folder. The browser check opens every page from disk in headless Chromium with every
request that is not ``file:`` or ``data:`` blocked, and checks the charts and the maths drew.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHROMIUM = Path(os.environ.get("TRAINIUM_LAB_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
# attributes that make a browser fetch something when the page loads
LOADING = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"),
           ("source", "src"), ("video", "src"), ("audio", "src"), ("embed", "src"),
           ("object", "data"), ("img", "srcset")}


class Page(HTMLParser):
    """Every tag's attributes, element ids, and the <img> tags inside the article."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.ids: set[str] = set()
        self.article_imgs: list[str] = []
        self.inline_scripts: list[str] = []
        self._article_depth = 0
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "article":
            self._article_depth += 1
        if tag == "script" and "src" not in a:
            self._in_script = True
            self.inline_scripts.append("")
        if tag == "img" and self._article_depth:
            self.article_imgs.append(a.get("src", ""))

    def handle_data(self, data):
        if self._in_script:
            self.inline_scripts[-1] += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False
        if tag == "article" and self._article_depth:
            self._article_depth -= 1


def stored_outputs(path: Path) -> tuple[int, int]:
    """(SVG chart outputs, widget outputs) stored in a notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    data = [o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code"
            for o in c.get("outputs", [])]
    return (sum("image/svg+xml" in d for d in data),
            sum("application/vnd.jupyter.widget-view+json" in d for d in data))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site.build(tmp_path_factory.mktemp("site"), quiet=True)


@pytest.fixture(scope="module")
def pages(site) -> dict[str, Page]:
    """Every page of the site (not the theme's template fragments under _static)."""
    return {p.relative_to(site).as_posix(): Page(p.read_text(encoding="utf-8"))
            for p in site.rglob("*.html") if p.relative_to(site).parts[0] not in ("_static", "mathjax")}


def test_there_are_chapters():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_page_has_its_charts(site, pages, path):
    page = pages.get(f"{path.stem}.html")
    assert page is not None, f"no page for {path.name}"
    n_svg, n_widgets = stored_outputs(path)
    charts = [src for src in page.article_imgs if src.endswith(".svg")]
    assert len(charts) == n_svg, f"{len(charts)} SVG charts on the page, {n_svg} in the notebook"
    for src in charts:
        file = site / unquote(src)
        assert file.is_file(), src
        assert b"<svg" in file.read_bytes()[:2000], f"{src} is not an SVG"
    html = (site / f"{path.stem}.html").read_text(encoding="utf-8")
    assert html.count("trainium-widget-note") == n_widgets  # widgets say where to run them


def test_table_of_contents(site, pages):
    chapters = [f"{p.stem}.html" for p in NOTEBOOKS]
    for name in ["index.html", *chapters]:
        hrefs = {urlsplit(a["href"]).path for tag, a in pages[name].tags
                 if tag == "a" and "href" in a}
        missing = [c for c in chapters if c not in hrefs and c != name]
        assert not missing, f"{name} does not link to {missing}"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="chapters"' in index
    # the chapters are listed in order on the home page
    positions = [index.find(f'href="{c}"') for c in chapters]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)


def test_every_link_and_resource_resolves(site, pages):
    broken = []
    for name, page in pages.items():
        base = (site / name).parent
        for tag, attrs in page.tags:
            for attr in ("href", "src"):
                url = attrs.get(attr)
                if not url or re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("//"):
                    continue  # absolute: checked by the CDN test
                parts = urlsplit(url)
                target = (base / unquote(parts.path)).resolve() if parts.path else site / name
                if not target.exists():
                    broken.append(f"{name}: {tag} {attr}={url}")
                    continue
                if parts.fragment and target.suffix == ".html" and target.is_file():
                    rel = target.relative_to(site.resolve()).as_posix()
                    if rel in pages and parts.fragment not in pages[rel].ids:
                        broken.append(f"{name}: {url} (no id {parts.fragment!r})")
    assert not broken, "\n".join(broken[:20])


def test_chapters_link_to_each_other(pages):
    """The navigation cells' Next/Previous/Contents links became links between pages."""
    for i, path in enumerate(NOTEBOOKS):
        page = pages[f"{path.stem}.html"]
        links = [a["href"] for tag, a in page.tags if tag == "a" and "href" in a
                 and "reference internal" in a.get("class", "")]
        if i + 1 < len(NOTEBOOKS):
            assert f"{NOTEBOOKS[i + 1].stem}.html" in links, f"{path.stem}: no link to the next chapter"
        assert any(h.startswith("index.html#chapters") for h in links), \
            f"{path.stem}: no link back to the chapter list"


def test_no_page_loads_anything_from_another_host(site, pages):
    remote = []
    for name, page in pages.items():
        for tag, attrs in page.tags:
            for attr in ("src", "href", "data", "srcset"):
                if (tag, attr) not in LOADING or attr not in attrs:
                    continue
                if tag == "link" and attrs.get("rel", "") in ("canonical", "next", "prev", "index",
                                                              "search", "author", "license"):
                    continue  # navigation hints, never fetched
                if re.match(r"^(https?:)?//", attrs[attr].strip(), re.I):
                    remote.append(f"{name}: <{tag} {attr}={attrs[attr]}>")
        for body in page.inline_scripts:  # e.g. a loader naming a CDN to fetch from later
            for url in re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'`]*", body):
                if not url.startswith(("//www.w3.org", "http://www.w3.org")):
                    remote.append(f"{name}: inline script names {url}")
    for css in site.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", css.read_text(errors="ignore")):
            remote.append(f"{css.relative_to(site)}: url({url})")
    assert not remote, "\n".join(remote[:20])


def test_maths_is_served_from_the_site(site):
    index = (site / "00_start_here.html").read_text(encoding="utf-8")
    assert re.search(r'<script[^>]+src="[^"]*mathjax/MathJax\.js\?config=', index)
    assert (site / "mathjax" / "MathJax.js").is_file()


@pytest.mark.browser
@pytest.mark.slow
def test_pages_open_from_disk_with_no_network(site):
    """Opened from file:// with every other request blocked, every chart and formula draws."""
    if not CHROMIUM.exists():
        if os.environ.get("TRAINIUM_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} missing (Debian package 'chromium')")
        pytest.skip(f"{CHROMIUM} missing (Debian package 'chromium')")
    from playwright.sync_api import sync_playwright

    from test_browser import CHROMIUM_ARGS

    blocked: list[str] = []
    problems: list[str] = []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})

        def only_local(route):
            if route.request.url.startswith(("file:", "data:", "blob:")):
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        context.route("**/*", only_local)
        page = context.new_page()
        page_errors: list[str] = []
        page.on("pageerror", lambda exc: page_errors.append(str(exc)[:200]))
        for path in NOTEBOOKS:
            n_svg, _ = stored_outputs(path)
            page.goto((site / f"{path.stem}.html").as_uri())
            page.wait_for_load_state("load")
            drawn = page.evaluate("""() => [...document.querySelectorAll('article img')]
                .filter(i => i.src.endsWith('.svg'))
                .map(i => i.complete && i.naturalWidth > 10)""")
            if len(drawn) != n_svg or not all(drawn):
                problems.append(f"{path.stem}: {sum(drawn)} of {n_svg} charts drawn")
            if page.query_selector("article .math"):
                try:
                    # attached, not visible: the first formula may sit in a folded <details>
                    page.wait_for_selector("article .MathJax, article .MathJax_CHTML, "
                                           "article .MathJax_SVG", state="attached", timeout=20_000)
                except Exception:  # noqa: BLE001 - playwright TimeoutError
                    problems.append(f"{path.stem}: MathJax did not typeset the formulas")
            page.screenshot(path=str(SCREENSHOTS / f"site_{path.stem}.png"))
        context.close()
        browser.close()
    assert not blocked, f"pages tried to reach other hosts: {sorted(set(blocked))[:10]}"
    assert not problems, problems
    assert not page_errors, page_errors


AXE = ROOT / "tools" / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
#: the rule sets axe-core runs: WCAG 2.0 and 2.1, levels A and AA
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_violations(site: Path, pages: list[str]) -> dict[str, list[dict]]:
    """{page: axe-core's violations} for each page opened from disk in headless Chromium."""
    from playwright.sync_api import sync_playwright

    from test_browser import CHROMIUM_ARGS

    out: dict[str, list[dict]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", lambda route: route.continue_()
                      if route.request.url.startswith(("file:", "data:", "blob:")) else route.abort())
        page = context.new_page()
        for name in pages:
            page.goto((site / name).as_uri())
            page.wait_for_load_state("load")
            page.add_script_tag(path=str(AXE))
            result = page.evaluate("""async (tags) => {
                const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
                return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5),
                    count: v.nodes.length}));
            }""", WCAG_TAGS)
            out[name] = result
        context.close()
        browser.close()
    return out


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_has_no_accessibility_violations(site, pages):
    """axe-core (WCAG 2.1 A and AA rules) finds nothing on any page of the site."""
    if not CHROMIUM.exists():
        if os.environ.get("TRAINIUM_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} missing (Debian package 'chromium')")
        pytest.skip(f"{CHROMIUM} missing (Debian package 'chromium')")
    assert AXE.is_file(), f"{AXE} missing: python3 tools/course.py test installs it (npm ci)"
    names = sorted(pages)
    assert len(names) >= len(NOTEBOOKS) + 1  # every chapter and the home page at least
    found = axe_violations(site, names)
    assert set(found) == set(names)
    problems = [f"{name}: {v['id']} ({v['impact']}, {v['count']} nodes: {v['nodes']}) {v['help']}"
                for name, violations in found.items() for v in violations]
    assert not problems, "\n".join(problems[:40])


def test_every_chart_image_says_what_it_shows(site, pages):
    """A chart's alt text is its description (the Vega-Lite ``description``, stored in the SVG
    as its aria-label), not its file name."""
    problems = []
    for name, page in pages.items():
        for tag, attrs in page.tags:
            if tag != "img" or not attrs.get("src", "").endswith(".svg"):
                continue
            alt = attrs.get("alt", "")
            svg = (site / unquote(attrs["src"])).read_text(encoding="utf-8")[:4000]
            label = re.search(r'<svg\b[^>]*\baria-label="([^"]*)"', svg)
            if not label or len(alt.split()) < 5 or alt.endswith(".svg"):
                problems.append(f"{name}: {attrs['src']} alt={alt[:60]!r}")
            elif html.unescape(alt) != html.unescape(label.group(1)):
                problems.append(f"{name}: alt differs from the chart's description")
    assert not problems, "\n".join(problems[:20])


def test_theme_buttons_are_named_by_what_they_show(site):
    """The fix for axe-core's label-content-name-mismatch is in every page."""
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not build_site.SEARCH_BUTTON.search(text), page.name
        assert not build_site.THEME_SWITCH.search(text), page.name
